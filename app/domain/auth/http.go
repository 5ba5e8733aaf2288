package auth

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/web"
	"nimbus/views"
)

const (
	sessionCookie = "nimbus_session"
	loginCSRF     = "nimbus_login_csrf"
	sessionIDKey  = "nimbus.session"
	viaTokenKey   = "nimbus.via_token"
)

// ErrCSRF is a form or request whose CSRF token is missing or wrong.
var ErrCSRF = echo.NewHTTPError(http.StatusForbidden, "the form has expired or did not come from Nimbus; reload the page and try again")

// Authenticate resolves the session cookie or bearer token to a principal, if any. A bearer
// token that does not resolve is refused outright rather than ignored.
func (s *Service) Authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx := c.Request().Context()
		if h := c.Request().Header.Get(echo.HeaderAuthorization); h != "" {
			token, ok := strings.CutPrefix(h, "Bearer ")
			if !ok {
				return problem.ErrUnauthenticated
			}
			token = strings.TrimSpace(token)
			p, scope, err := s.tokenPrincipal(ctx, token)
			if err != nil {
				return err
			}
			if scope == ScopeReadOnly && !safeMethod(c.Request().Method) {
				return &problem.Denied{Message: "this API token is read-only: it may only read (GET, HEAD); use a token with full or tenant scope to make changes"}
			}
			web.SetPrincipal(c, p, "")
			web.SetRecheck(c, func(ctx context.Context) (access.Principal, error) { return s.TokenPrincipal(ctx, token) })
			c.Set(viaTokenKey, true)
			return next(c)
		}
		cookie, err := c.Cookie(sessionCookie)
		if err != nil || cookie.Value == "" {
			return next(c)
		}
		p, sess, err := s.SessionPrincipal(ctx, cookie.Value)
		if errors.Is(err, problem.ErrUnauthenticated) {
			clearCookie(c, sessionCookie)
			return next(c)
		}
		if err != nil {
			return err
		}
		web.SetPrincipal(c, p, sess.CSRF)
		secret := cookie.Value
		web.SetRecheck(c, func(ctx context.Context) (access.Principal, error) {
			p, _, err := s.sessionPrincipal(ctx, secret, false)
			return p, err
		})
		c.Set(sessionIDKey, sess.ID)
		c.Set(enrolOnlyKey, sess.EnrolOnly)
		return next(c)
	}
}

// safeMethod reports whether method only reads.
func safeMethod(method string) bool { return method == http.MethodGet || method == http.MethodHead }

// RequireSignIn refuses requests that carry no principal: the API answers 401, pages send the
// browser to the sign-in form. A session that may only set up a second factor reaches only that.
func RequireSignIn(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if _, ok := web.Principal(c); !ok {
			return problem.ErrUnauthenticated
		}
		if err := requireEnrolment(c); err != nil {
			return err
		}
		return next(c)
	}
}

// CheckCSRF requires the session's CSRF token on every unsafe request made with a session
// cookie. Requests with a bearer token carry no ambient credential and need none.
func CheckCSRF(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		switch c.Request().Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			return next(c)
		}
		if via, _ := c.Get(viaTokenKey).(bool); via {
			return next(c)
		}
		// The jobs UI is a script of its own that cannot send our token; it posts JSON, which
		// a cross-site form cannot, and cross-origin requests are refused before this point.
		if strings.HasPrefix(c.Path(), "/admin/jobs") && strings.HasPrefix(c.Request().Header.Get(echo.HeaderContentType), echo.MIMEApplicationJSON) {
			return next(c)
		}
		want := web.CSRF(c)
		if want == "" {
			return next(c) // signed out: handlers that accept anonymous posts check their own
		}
		got := c.Request().Header.Get("X-CSRF-Token")
		if got == "" {
			got = c.FormValue("_csrf")
		}
		if subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
			return ErrCSRF
		}
		return next(c)
	}
}

// Handlers serves sign-in (with a password and a second factor, or through the identity
// provider), sign-out, second factors and API tokens.
type Handlers struct {
	svc     *Service
	sso     *SSO
	factors *Factors
	secure  bool
}

// NewHandlers returns the handlers; secure marks cookies Secure (Nimbus is served over TLS).
func NewHandlers(svc *Service, sso *SSO, factors *Factors, secure bool) *Handlers {
	return &Handlers{svc: svc, sso: sso, factors: factors, secure: secure}
}

// LoginForm shows the sign-in page.
func (h *Handlers) LoginForm(c echo.Context) error {
	if _, ok := web.Principal(c); ok {
		return c.Redirect(http.StatusSeeOther, safeNext(c.QueryParam("next")))
	}
	return h.renderLogin(c, http.StatusOK, "", nil)
}

func (h *Handlers) renderLogin(c echo.Context, status int, email string, errs views.Errors) error {
	token := newSecret()
	if ck, err := c.Cookie(loginCSRF); err == nil && ck.Value != "" {
		token = ck.Value
	}
	c.SetCookie(h.cookie(loginCSRF, token, time.Now().Add(2*time.Hour)))
	page := web.Page(c, "Sign in")
	page.CSRF = token
	offer, err := h.sso.Offer(web.Ctx(c))
	if err != nil {
		return err
	}
	return web.Render(c, status, Login(page, email, safeNext(c.FormValue("next")), offer, errs))
}

// checkLoginCSRF checks the token of a form or script posting before there is a session: the
// sign-in page's cookie and the field (or a script's header) must match.
func (h *Handlers) checkLoginCSRF(c echo.Context) error {
	got := c.Request().Header.Get("X-CSRF-Token")
	if got == "" {
		got = c.FormValue("_csrf")
	}
	ck, err := c.Cookie(loginCSRF)
	if err != nil || ck.Value == "" || subtle.ConstantTimeCompare([]byte(ck.Value), []byte(got)) != 1 {
		return ErrCSRF
	}
	return nil
}

// Login checks the credentials and opens a session, or sends the browser on to the second
// step.
func (h *Handlers) Login(c echo.Context) error {
	if err := h.checkLoginCSRF(c); err != nil {
		return err
	}
	email := c.FormValue("email")
	in, err := h.svc.Login(c.Request().Context(), email, c.FormValue("password"), c.RealIP())
	var limited *problem.TooManyRequests
	switch {
	case web.FormErrors(err) != nil:
		return h.renderLogin(c, http.StatusUnprocessableEntity, email, web.FormErrors(err))
	case errors.As(err, &limited):
		c.Response().Header().Set("Retry-After", strconv.Itoa(limited.RetryAfter))
		return h.renderLogin(c, http.StatusTooManyRequests, email, views.Errors{"form": limited.Message})
	case err != nil:
		return err
	case in.SecondStep != "":
		// The sign-in page's CSRF cookie stays: the second step's form uses it too.
		ck := h.cookie(secondStepCookie, in.SecondStep, time.Now().Add(secondStepTTL))
		ck.Path = secondStepPath
		c.SetCookie(ck)
		return c.Redirect(http.StatusSeeOther, secondStepPath+"?next="+url.QueryEscape(safeNext(c.FormValue("next"))))
	}
	clearCookie(c, loginCSRF)
	c.SetCookie(h.cookie(sessionCookie, in.Session.Secret, time.Time{}))
	if in.Session.EnrolOnly {
		web.SetFlash(c, web.FlashInfo, "Set up a second factor first: the operator requires one of provider admins.")
		return c.Redirect(http.StatusSeeOther, "/account")
	}
	return c.Redirect(http.StatusSeeOther, safeNext(c.FormValue("next")))
}

// Logout ends the session.
func (h *Handlers) Logout(c echo.Context) error {
	if id, ok := c.Get(sessionIDKey).(uuid.UUID); ok {
		if err := h.svc.Logout(c.Request().Context(), web.Actor(c), id); err != nil {
			return err
		}
	}
	clearCookie(c, sessionCookie)
	web.SetFlash(c, web.FlashInfo, "You have signed out.")
	// Someone who signed in through the identity provider signs out there too, when it says
	// where; they come back to the sign-in page.
	to, err := h.sso.EndSession(web.Ctx(c), web.Actor(c).UserID, baseURL(c)+"/login")
	if err != nil {
		return err
	}
	if to != "" {
		// A page that moves on by itself, not a redirect: the form's navigation may not leave
		// Nimbus (the policy's form-action), a navigation of its own may.
		c.Response().Header().Set("Refresh", "0; url="+to)
		return web.Render(c, http.StatusOK, SigningOut(web.Page(c, "Signing out"), to))
	}
	return c.Redirect(http.StatusSeeOther, "/login")
}

// TokensPage lists the user's tokens with the form to create one.
func (h *Handlers) TokensPage(c echo.Context) error {
	return h.renderTokens(c, http.StatusOK, "", TokenForm{Expires: "90", Scope: string(ScopeFull)}, nil)
}

func (h *Handlers) renderTokens(c echo.Context, status int, secret string, form TokenForm, errs views.Errors) error {
	tokens, err := h.svc.ListTokens(web.Ctx(c), web.Actor(c))
	if err != nil {
		return err
	}
	tenants, err := h.svc.TokenTenants(web.Ctx(c), web.Actor(c))
	if err != nil {
		return err
	}
	form.Tenants = tenants
	return web.Render(c, status, Tokens(web.Page(c, "API tokens"), tokenRows(tokens), secret, form, errs))
}

// CreateTokenForm creates a token and shows its secret once. Its expiry is a number of days
// (expires) or, when expires is "date", the date in expires_at.
func (h *Handlers) CreateTokenForm(c echo.Context) error {
	form := TokenForm{Name: c.FormValue("name"), Expires: c.FormValue("expires"), ExpiresAt: c.FormValue("expires_at"),
		Scope: c.FormValue("scope"), Tenant: c.FormValue("tenant_id")}
	tok, err := h.createFromForm(c, form)
	if errs := web.FormErrors(err); errs != nil {
		return h.renderTokens(c, http.StatusUnprocessableEntity, "", form, errs)
	}
	if err != nil {
		return err
	}
	return h.renderTokens(c, http.StatusCreated, tok.Secret, TokenForm{Expires: "90", Scope: string(ScopeFull)}, nil)
}

func (h *Handlers) createFromForm(c echo.Context, form TokenForm) (NewToken, error) {
	spec := TokenSpec{Name: form.Name, Scope: Scope(form.Scope)}
	var err error
	if form.Expires == "date" {
		spec.ExpiresAt, err = ExpiresOn("expires_at", form.ExpiresAt)
	} else if days, convErr := strconv.Atoi(form.Expires); convErr != nil {
		err = problem.Invalid("expires", "one_of", "choose how long the token lasts")
	} else {
		spec.ExpiresAt, err = ExpiresIn("expires", days)
	}
	if err != nil {
		return NewToken{}, err
	}
	if spec.Scope == ScopeTenant {
		if spec.Tenant, err = uuid.Parse(form.Tenant); err != nil {
			return NewToken{}, problem.Invalid("tenant_id", "member", "must be a tenant you are a member of")
		}
	}
	return h.svc.CreateToken(web.Ctx(c), web.Actor(c), spec)
}

// RevokeTokenForm revokes a token from the tokens page.
func (h *Handlers) RevokeTokenForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	if err := h.svc.RevokeToken(c.Request().Context(), web.Actor(c), id); err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, "Token revoked.")
	return web.Redirect(c, "/tokens")
}

// ListTokensAPI answers GET /api/v1/tokens.
func (h *Handlers) ListTokensAPI(c echo.Context) error {
	tokens, err := h.svc.ListTokens(c.Request().Context(), web.Actor(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"tokens": tokens})
}

// TokenRequest is the body of POST /api/v1/tokens: the expiry as a number of days or a date
// (90 days when neither), and the scope (full when empty; tenant_id for a tenant scope).
type TokenRequest struct {
	Name          string     `json:"name"`
	ExpiresInDays int        `json:"expires_in_days"`
	ExpiresAt     string     `json:"expires_at"`
	Scope         Scope      `json:"scope"`
	TenantID      *uuid.UUID `json:"tenant_id"`
}

// CreateTokenAPI answers POST /api/v1/tokens with the new token's secret, shown this once.
func (h *Handlers) CreateTokenAPI(c echo.Context) error {
	var in TokenRequest
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	spec := TokenSpec{Name: in.Name, Scope: in.Scope}
	var err error
	switch {
	case in.ExpiresInDays != 0 && in.ExpiresAt != "":
		return problem.Invalid("expires_at", "exclusive", "give expires_in_days or expires_at, not both")
	case in.ExpiresInDays != 0:
		spec.ExpiresAt, err = ExpiresIn("expires_in_days", in.ExpiresInDays)
	case in.ExpiresAt != "":
		spec.ExpiresAt, err = ExpiresOn("expires_at", in.ExpiresAt)
	}
	if err != nil {
		return err
	}
	if in.TenantID != nil {
		spec.Tenant = *in.TenantID
	}
	tok, err := h.svc.CreateToken(web.Ctx(c), web.Actor(c), spec)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, tok)
}

// RevokeTokenAPI answers DELETE /api/v1/tokens/{id}.
func (h *Handlers) RevokeTokenAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	if err := h.svc.RevokeToken(c.Request().Context(), web.Actor(c), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (h *Handlers) cookie(name, value string, expires time.Time) *http.Cookie {
	return &http.Cookie{
		Name: name, Value: value, Path: "/", Expires: expires,
		HttpOnly: true, Secure: h.secure, SameSite: http.SameSiteLaxMode,
	}
}

func clearCookie(c echo.Context, name string) {
	c.SetCookie(&http.Cookie{Name: name, Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode})
}

// safeNext keeps a post-sign-in redirect on this site.
func safeNext(next string) string {
	u, err := url.Parse(next)
	if next == "" || err != nil || u.IsAbs() || u.Host != "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.Contains(next, `\`) {
		return "/"
	}
	return next
}

func tokenRows(tokens []Token) []TokenRow {
	rows := make([]TokenRow, len(tokens))
	for i, t := range tokens {
		rows[i] = TokenRow{ID: t.ID, Name: t.Name, Prefix: t.Prefix, Scope: t.Scope.Label(), Tenant: t.TenantName, CreatedAt: t.CreatedAt,
			LastUsedAt: t.LastUsedAt, ExpiresAt: t.ExpiresAt, Expired: t.Expired(), Assigned: t.ExpiryAssigned}
	}
	return rows
}

// MeAPI answers GET /api/v1/me: who the token or session acts as.
func (h *Handlers) MeAPI(c echo.Context) error {
	p := web.Actor(c)
	roles := map[string]access.Role{}
	for t, r := range p.Roles {
		roles[t.String()] = r
	}
	return c.JSON(http.StatusOK, map[string]any{"id": p.UserID, "email": p.Email, "provider_admin": p.ProviderAdmin, "roles": roles})
}
