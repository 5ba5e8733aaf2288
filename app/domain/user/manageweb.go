package user

import (
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"nimbus/app/platform/web"
	"nimbus/views"
)

// UserPage shows one user: their roles, and for provider admins the forms that edit, disable,
// remove them and reset their password.
func (h *Handlers) UserPage(c echo.Context) error {
	return h.renderUser(c, http.StatusOK, nil)
}

func (h *Handlers) renderUser(c echo.Context, status int, errs views.Errors) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	actor := web.Actor(c)
	u, err := h.svc.Get(web.Ctx(c), actor, id)
	if err != nil {
		return err
	}
	v := UserView{ID: u.ID.String(), Email: u.Email, ProviderAdmin: u.ProviderAdmin, Disabled: u.Disabled, Created: u.Created(),
		Self: u.ID == actor.UserID, CanManage: actor.ProviderAdmin, Errors: errs}
	if errs != nil {
		v.Email, v.ProviderAdmin = c.FormValue("email"), c.FormValue("provider_admin") == "true"
	}
	for _, m := range u.Tenants {
		v.Tenants = append(v.Tenants, MembershipRow{TenantID: m.TenantID.String(), Tenant: m.Tenant, Role: m.Role.Label()})
	}
	return web.Render(c, status, UserDetail(web.Page(c, u.Email), v))
}

// EditForm changes a user's email and provider-admin role.
func (h *Handlers) EditForm(c echo.Context) error {
	email, admin := c.FormValue("email"), c.FormValue("provider_admin") == "true"
	return h.manage(c, "User saved.", func(id uuid.UUID) error {
		_, err := h.svc.Update(web.Ctx(c), web.Actor(c), id, Change{Email: &email, ProviderAdmin: &admin})
		return err
	})
}

// DisableForm disables or enables a user's account (enable=true in the form enables it).
func (h *Handlers) DisableForm(c echo.Context) error {
	disabled := c.FormValue("enable") != "true"
	msg := "Account disabled: its sessions are ended and its API tokens refused."
	if !disabled {
		msg = "Account enabled."
	}
	return h.manage(c, msg, func(id uuid.UUID) error {
		_, err := h.svc.Update(web.Ctx(c), web.Actor(c), id, Change{Disabled: &disabled})
		return err
	})
}

// ResetPasswordForm gives a user the password a provider admin typed.
func (h *Handlers) ResetPasswordForm(c echo.Context) error {
	return h.manage(c, "Password reset: give it to the user, whose sessions are ended.", func(id uuid.UUID) error {
		return h.svc.ResetPassword(web.Ctx(c), web.Actor(c), id, c.FormValue("password"))
	})
}

// ResetSecondFactorForm removes a user's second factor, for a lost phone.
func (h *Handlers) ResetSecondFactorForm(c echo.Context) error {
	return h.manage(c, "Second factor reset: the user signs in with their password and sets up a new one.", func(id uuid.UUID) error {
		return h.svc.ResetSecondFactor(web.Ctx(c), web.Actor(c), id)
	})
}

// RemoveForm removes a user, then shows the list.
func (h *Handlers) RemoveForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	err = h.svc.Remove(web.Ctx(c), web.Actor(c), id)
	if errs := web.FormErrors(err); errs != nil {
		return h.renderUser(c, http.StatusUnprocessableEntity, errs)
	}
	if err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, "User removed.")
	return web.Redirect(c, "/users")
}

// manage runs one of the user page's forms: back to the page with a message, or with the
// problems beside their fields.
func (h *Handlers) manage(c echo.Context, done string, change func(id uuid.UUID) error) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	err = change(id)
	if errs := web.FormErrors(err); errs != nil {
		return h.renderUser(c, http.StatusUnprocessableEntity, errs)
	}
	if err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, done)
	return web.Redirect(c, "/users/"+id.String())
}

// UpdateAPI answers PATCH /api/v1/users/{id}: email, provider_admin and disabled, each
// optional.
func (h *Handlers) UpdateAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	// Whoever may not see the user hears of no such user, whatever the body says.
	if _, err := h.svc.Get(web.Ctx(c), web.Actor(c), id); err != nil {
		return err
	}
	var in Change
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	u, err := h.svc.Update(web.Ctx(c), web.Actor(c), id, in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, u)
}

// RemoveAPI answers DELETE /api/v1/users/{id}.
func (h *Handlers) RemoveAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	if err := h.svc.Remove(web.Ctx(c), web.Actor(c), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// ResetPasswordAPI answers POST /api/v1/users/{id}/password with {"password": …}.
func (h *Handlers) ResetPasswordAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	if _, err := h.svc.Get(web.Ctx(c), web.Actor(c), id); err != nil {
		return err
	}
	var in struct {
		Password string `json:"password"`
	}
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	if err := h.svc.ResetPassword(web.Ctx(c), web.Actor(c), id, in.Password); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
