package proxmox

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"nimbus/app/platform/web"
)

// Page answers GET /landing-zones/{id}/proxmox-access.
func (h *Handlers) Page(c echo.Context) error {
	return h.render(c, http.StatusOK, PageView{Saved: c.QueryParam("saved") != ""})
}

// SetForm answers POST /landing-zones/{id}/proxmox-access: the access checked and saved, or the
// form again with why not.
func (h *Handlers) SetForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	in := NewAccess{Endpoint: c.FormValue("endpoint"), TokenID: c.FormValue("token_id"), Secret: c.FormValue("secret"), CACert: c.FormValue("ca_cert")}
	_, err = h.svc.Set(web.Ctx(c), web.Actor(c), id, in)
	if errs := web.FormErrors(err); errs != nil {
		// What was typed comes back to be fixed, but the secret is never echoed.
		in.Secret = ""
		return h.render(c, http.StatusUnprocessableEntity, PageView{Errors: errs, Given: in})
	}
	if err != nil {
		return err
	}
	return web.Redirect(c, "/landing-zones/"+id.String()+"/proxmox-access?saved=1")
}

// CheckForm answers POST /landing-zones/{id}/proxmox-access/check.
func (h *Handlers) CheckForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	_, err = h.svc.Recheck(web.Ctx(c), web.Actor(c), id)
	if errs := web.FormErrors(err); errs != nil {
		return h.render(c, http.StatusUnprocessableEntity, PageView{Errors: errs, Rechecked: true})
	}
	if err != nil {
		return err
	}
	return web.Redirect(c, "/landing-zones/"+id.String()+"/proxmox-access")
}

// RemoveForm answers POST /landing-zones/{id}/proxmox-access/remove.
func (h *Handlers) RemoveForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	err = h.svc.Remove(web.Ctx(c), web.Actor(c), id)
	if errs := web.FormErrors(err); errs != nil {
		return h.render(c, http.StatusUnprocessableEntity, PageView{Errors: errs, Rechecked: true})
	}
	if err != nil {
		return err
	}
	return web.Redirect(c, "/landing-zones/"+id.String()+"/proxmox-access")
}

func (h *Handlers) render(c echo.Context, status int, v PageView) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	ctx := web.Ctx(c)
	if v.Access, err = h.svc.Get(ctx, web.Actor(c), id); err != nil {
		return err
	}
	z, err := h.svc.zone(ctx, id)
	if err != nil {
		return err
	}
	v.ZoneName = z.Name
	v.ZoneID = id.String()
	if v.Access != nil && v.Given == (NewAccess{}) {
		v.Given = NewAccess{Endpoint: v.Access.Endpoint, TokenID: v.Access.TokenID, CACert: v.Access.CACert}
	}
	return web.Render(c, status, AccessPage(web.Page(c, "Proxmox API access"), v))
}
