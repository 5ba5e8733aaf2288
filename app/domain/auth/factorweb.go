package auth

import (
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/problem"
	"nimbus/app/platform/web"
	"nimbus/views"
)

// The second step of a sign-in: its page, and the cookie binding it to the browser that typed
// the password, sent to that page alone.
const (
	secondStepCookie = "nimbus_second_step"
	secondStepPath   = "/login/second-factor"
)

// enrolOnlyKey marks a request made with a session that may only set up a second factor.
const enrolOnlyKey = "nimbus.enrol_only"

// enrolRoutes are what a session that may only set up a second factor may reach.
var enrolRoutes = map[string]bool{
	"GET /account":                        true,
	"POST /account/second-factor":         true,
	"POST /account/second-factor/confirm": true,
	"POST /logout":                        true,
}

// requireEnrolment keeps a session that may only set up a second factor on the account page.
func requireEnrolment(c echo.Context) error {
	if only, _ := c.Get(enrolOnlyKey).(bool); !only || enrolRoutes[c.Request().Method+" "+c.Path()] {
		return nil
	}
	if strings.HasPrefix(c.Path(), "/api/") {
		return &problem.Denied{Message: "the operator requires provider admins to have a second factor: set one up on your account page first"}
	}
	web.SetFlash(c, web.FlashInfo, "Set up a second factor first: the operator requires one of provider admins.")
	return web.Redirect(c, "/account")
}

// SecondStepForm answers GET /login/second-factor: the code form of a sign-in whose password
// was right.
func (h *Handlers) SecondStepForm(c echo.Context) error {
	if ck, err := c.Cookie(secondStepCookie); err != nil || ck.Value == "" {
		return c.Redirect(http.StatusSeeOther, "/login")
	}
	return h.renderSecondStep(c, http.StatusOK, nil)
}

func (h *Handlers) renderSecondStep(c echo.Context, status int, errs views.Errors) error {
	page := web.Page(c, "Second factor")
	if ck, err := c.Cookie(loginCSRF); err == nil {
		page.CSRF = ck.Value
	}
	return web.Render(c, status, SecondStepPage(page, safeNext(c.FormValue("next")), c.FormValue("recovery") != "", errs))
}

// SecondStep answers POST /login/second-factor: signed in and on, the form again after a wrong
// code, or the sign-in page when the sign-in must start again.
func (h *Handlers) SecondStep(c echo.Context) error {
	if err := h.checkLoginCSRF(c); err != nil {
		return err
	}
	in := SecondStep{Code: c.FormValue("code"), ClientIP: c.RealIP()}
	if ck, err := c.Cookie(secondStepCookie); err == nil {
		in.Binding = ck.Value
	}
	sess, err := h.factors.Finish(web.Ctx(c), in)
	errs := web.FormErrors(err)
	switch {
	case errs["sign_in"] != "":
		h.clearSecondStep(c)
		return h.renderLogin(c, http.StatusUnauthorized, "", views.Errors{"form": errs["sign_in"]})
	case errs != nil:
		return h.renderSecondStep(c, http.StatusUnprocessableEntity, errs)
	case err != nil:
		return err
	}
	h.clearSecondStep(c)
	clearCookie(c, loginCSRF)
	c.SetCookie(h.cookie(sessionCookie, sess.Secret, time.Time{}))
	return c.Redirect(http.StatusSeeOther, safeNext(c.FormValue("next")))
}

func (h *Handlers) clearSecondStep(c echo.Context) {
	c.SetCookie(&http.Cookie{Name: secondStepCookie, Path: secondStepPath, MaxAge: -1, HttpOnly: true, Secure: h.secure, SameSite: http.SameSiteLaxMode})
}

// renderAccount shows the account page, with recovery codes when they were just made and the
// roles granted to the actor for a while.
func (h *Handlers) renderAccount(c echo.Context, status int, codes []string, errs views.Errors) error {
	st, err := h.factors.Status(web.Ctx(c), web.Actor(c))
	if err != nil {
		return err
	}
	keys, err := h.factors.Keys(web.Ctx(c), web.Actor(c))
	if err != nil {
		return err
	}
	offer, err := h.sso.Offer(web.Ctx(c))
	if err != nil {
		return err
	}
	held, err := h.svc.Elevations(web.Ctx(c), web.Actor(c))
	if err != nil {
		return err
	}
	return web.Render(c, status, Account(web.Page(c, "Your account"), AccountView{Email: web.Actor(c).Email, Factor: st, Keys: keys, Provider: offer.Name,
		RecoveryCodes: codes, Held: held, Errors: errs}))
}

// BeginFactorForm answers POST /account/second-factor: a new secret to copy into an
// authenticator app, on the account page.
func (h *Handlers) BeginFactorForm(c echo.Context) error {
	_, err := h.factors.Begin(web.Ctx(c), web.Actor(c))
	if errs := web.FormErrors(err); errs != nil {
		return h.renderAccount(c, http.StatusUnprocessableEntity, nil, errs)
	}
	if err != nil {
		return err
	}
	return web.Redirect(c, "/account")
}

// ConfirmFactorForm answers POST /account/second-factor/confirm: the factor on and the recovery
// codes shown once, or the form again.
func (h *Handlers) ConfirmFactorForm(c echo.Context) error {
	codes, err := h.factors.Confirm(web.Ctx(c), web.Actor(c), c.FormValue("code"), c.RealIP())
	if errs := web.FormErrors(err); errs != nil {
		return h.renderAccount(c, http.StatusUnprocessableEntity, nil, errs)
	}
	if err != nil {
		return err
	}
	return h.renderAccount(c, http.StatusCreated, codes, nil)
}

// DisableFactorForm answers POST /account/second-factor/disable.
func (h *Handlers) DisableFactorForm(c echo.Context) error {
	err := h.factors.Disable(web.Ctx(c), web.Actor(c), c.FormValue("code"), c.RealIP())
	if errs := web.FormErrors(err); errs != nil {
		return h.renderAccount(c, http.StatusUnprocessableEntity, nil, errs)
	}
	if err != nil {
		return err
	}
	web.SetFlash(c, web.FlashInfo, "Your second factor is off: you sign in with your password alone.")
	return web.Redirect(c, "/account")
}

// RecoveryCodesForm answers POST /account/second-factor/recovery-codes: new codes shown once.
func (h *Handlers) RecoveryCodesForm(c echo.Context) error {
	codes, err := h.factors.RegenerateRecovery(web.Ctx(c), web.Actor(c), c.FormValue("code"), c.RealIP())
	if errs := web.FormErrors(err); errs != nil {
		return h.renderAccount(c, http.StatusUnprocessableEntity, nil, errs)
	}
	if err != nil {
		return err
	}
	return h.renderAccount(c, http.StatusCreated, codes, nil)
}

// The security key ceremonies are JSON between the page's script and Nimbus: the options for
// the browser's WebAuthn call out, its answer back. A refusal answers 422 with the fields'
// messages, for the script to show.

// BeginKeyJSON answers POST /account/security-keys/begin.
func (h *Handlers) BeginKeyJSON(c echo.Context) error {
	opts, err := h.factors.BeginKey(web.Ctx(c), web.Actor(c), baseURL(c))
	if errs := web.FormErrors(err); errs != nil {
		return c.JSON(http.StatusUnprocessableEntity, errs)
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, opts)
}

// FinishKeyJSON answers POST /account/security-keys/finish?name=: the key registered.
func (h *Handlers) FinishKeyJSON(c echo.Context) error {
	err := h.factors.FinishKey(web.Ctx(c), web.Actor(c), baseURL(c), c.QueryParam("name"), c.Request())
	if errs := web.FormErrors(err); errs != nil {
		return c.JSON(http.StatusUnprocessableEntity, errs)
	}
	if err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, "Security key added: at sign-in, it can stand for the code from your authenticator app.")
	return c.NoContent(http.StatusNoContent)
}

// BeginKeySignInJSON answers POST /login/second-factor/key/begin.
func (h *Handlers) BeginKeySignInJSON(c echo.Context) error {
	if err := h.checkLoginCSRF(c); err != nil {
		return err
	}
	var binding string
	if ck, err := c.Cookie(secondStepCookie); err == nil {
		binding = ck.Value
	}
	opts, err := h.factors.BeginKeySignIn(web.Ctx(c), binding, baseURL(c))
	if errs := web.FormErrors(err); errs != nil {
		return c.JSON(http.StatusUnprocessableEntity, errs)
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, opts)
}

// FinishKeySignInJSON answers POST /login/second-factor/key/finish?next=: signed in, and where
// to go next.
func (h *Handlers) FinishKeySignInJSON(c echo.Context) error {
	if err := h.checkLoginCSRF(c); err != nil {
		return err
	}
	in := SecondStep{ClientIP: c.RealIP()}
	if ck, err := c.Cookie(secondStepCookie); err == nil {
		in.Binding = ck.Value
	}
	sess, err := h.factors.FinishKeySignIn(web.Ctx(c), in, baseURL(c), c.Request())
	if errs := web.FormErrors(err); errs != nil {
		if errs["sign_in"] != "" {
			h.clearSecondStep(c)
		}
		return c.JSON(http.StatusUnprocessableEntity, errs)
	}
	if err != nil {
		return err
	}
	h.clearSecondStep(c)
	clearCookie(c, loginCSRF)
	c.SetCookie(h.cookie(sessionCookie, sess.Secret, time.Time{}))
	return c.JSON(http.StatusOK, map[string]string{"next": safeNext(c.QueryParam("next"))})
}
