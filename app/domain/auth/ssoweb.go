package auth

import (
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"nimbus/app/platform/web"
	"nimbus/views"
)

// ssoCookie holds the binding of a sign-in begun at the identity provider, for the callback
// alone.
const (
	ssoCookie     = "nimbus_sso"
	ssoCookiePath = "/login/sso"
	callbackPath  = "/login/sso/callback"
)

// baseURL is the address this request reached Nimbus at, for the addresses Nimbus gives the
// identity provider to send the browser back to.
func baseURL(c echo.Context) string {
	return c.Scheme() + "://" + c.Request().Host
}

// BeginSSO answers GET /login/sso: the browser goes to the identity provider, carrying a
// binding cookie that only the callback reads.
func (h *Handlers) BeginSSO(c echo.Context) error {
	to, binding, err := h.sso.Begin(web.Ctx(c), baseURL(c)+callbackPath, c.QueryParam("next"))
	if err != nil {
		return err
	}
	ck := h.cookie(ssoCookie, binding, time.Now().Add(loginTTL))
	ck.Path = ssoCookiePath
	c.SetCookie(ck)
	return c.Redirect(http.StatusSeeOther, to)
}

// FinishSSO answers GET /login/sso/callback: signed in and on to where the sign-in began, or the
// sign-in page saying why not.
func (h *Handlers) FinishSSO(c echo.Context) error {
	in := Callback{Query: c.QueryParams(), ClientIP: c.RealIP()}
	if ck, err := c.Cookie(ssoCookie); err == nil {
		in.Binding = ck.Value
	}
	c.SetCookie(&http.Cookie{Name: ssoCookie, Path: ssoCookiePath, MaxAge: -1, HttpOnly: true, Secure: h.secure, SameSite: http.SameSiteLaxMode})
	sess, next, err := h.sso.Finish(web.Ctx(c), baseURL(c)+callbackPath, in)
	if errs := web.FormErrors(err); errs != nil {
		return h.renderLogin(c, http.StatusUnauthorized, "", errs)
	}
	if err != nil {
		return err
	}
	c.SetCookie(h.cookie(sessionCookie, sess.Secret, time.Time{}))
	return c.Redirect(http.StatusSeeOther, next)
}

// ProviderPage answers GET /admin/identity-provider.
func (h *Handlers) ProviderPage(c echo.Context) error {
	return h.renderProvider(c, http.StatusOK, nil, nil)
}

// SetProviderForm answers POST /admin/identity-provider: the provider checked and saved, or the
// form again with why not.
func (h *Handlers) SetProviderForm(c echo.Context) error {
	in := NewIdentityProvider{Name: c.FormValue("name"), Issuer: c.FormValue("issuer"), ClientID: c.FormValue("client_id"),
		ClientSecret: c.FormValue("client_secret"), Scopes: c.FormValue("scopes"), GroupsClaim: c.FormValue("groups_claim"),
		Mappings: c.FormValue("mappings"), LocalLogin: c.FormValue("local_login") != ""}
	_, err := h.sso.Set(web.Ctx(c), web.Actor(c), in)
	if errs := web.FormErrors(err); errs != nil {
		in.ClientSecret = "" // what was typed comes back to be fixed, but the secret is never echoed
		return h.renderProvider(c, http.StatusUnprocessableEntity, &in, errs)
	}
	if err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, "The identity provider is saved: its discovery document names the same issuer.")
	return web.Redirect(c, "/admin/identity-provider")
}

// RemoveProviderForm answers POST /admin/identity-provider/remove.
func (h *Handlers) RemoveProviderForm(c echo.Context) error {
	if err := h.sso.Remove(web.Ctx(c), web.Actor(c)); err != nil {
		return err
	}
	web.SetFlash(c, web.FlashInfo, "The identity provider is removed: people sign in with their password.")
	return web.Redirect(c, "/admin/identity-provider")
}

func (h *Handlers) renderProvider(c echo.Context, status int, given *NewIdentityProvider, errs views.Errors) error {
	p, err := h.sso.Provider(web.Ctx(c), web.Actor(c))
	if err != nil {
		return err
	}
	v := ProviderView{Current: p, Callback: baseURL(c) + callbackPath, Errors: errs}
	switch {
	case given != nil:
		v.Given = *given
	case p != nil:
		v.Given = NewIdentityProvider{Name: p.Name, Issuer: p.Issuer, ClientID: p.ClientID, Scopes: strings.Join(p.Scopes, " "),
			GroupsClaim: p.GroupsClaim, Mappings: MappingsText(p.Mappings), LocalLogin: p.LocalLogin}
	default:
		v.Given = NewIdentityProvider{Scopes: "openid email profile", GroupsClaim: "groups", LocalLogin: true}
	}
	return web.Render(c, status, ProviderSettings(web.Page(c, "Identity provider"), v))
}
