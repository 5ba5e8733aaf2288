package auth

import (
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"nimbus/app/platform/web"
	"nimbus/views"
)

// AccountPage shows who one is signed in as, with the form to change one's password.
func (h *Handlers) AccountPage(c echo.Context) error {
	return h.renderAccount(c, http.StatusOK, nil)
}

// renderAccount shows the account page with the elevations the actor holds now.
func (h *Handlers) renderAccount(c echo.Context, status int, errs views.Errors) error {
	held, err := h.svc.Elevations(web.Ctx(c), web.Actor(c))
	if err != nil {
		return err
	}
	return web.Render(c, status, Account(web.Page(c, "Your account"), web.Actor(c).Email, held, errs))
}

// ChangePasswordForm changes one's password from the account page; this session goes on.
func (h *Handlers) ChangePasswordForm(c echo.Context) error {
	keep, _ := c.Get(sessionIDKey).(uuid.UUID)
	err := h.svc.ChangePassword(web.Ctx(c), web.Actor(c), keep, c.FormValue("current_password"), c.FormValue("new_password"))
	if errs := web.FormErrors(err); errs != nil {
		return h.renderAccount(c, http.StatusUnprocessableEntity, errs)
	}
	if err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, "Your password is changed, and your other sessions are signed out.")
	return web.Redirect(c, "/account")
}

// PasswordChange is the body of POST /api/v1/account/password.
type PasswordChange struct {
	Current string `json:"current_password"`
	New     string `json:"new_password"`
}

// ChangePasswordAPI answers POST /api/v1/account/password: every session of the token's user
// ends.
func (h *Handlers) ChangePasswordAPI(c echo.Context) error {
	var in PasswordChange
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	keep, _ := c.Get(sessionIDKey).(uuid.UUID)
	if err := h.svc.ChangePassword(web.Ctx(c), web.Actor(c), keep, in.Current, in.New); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
