package proxmox

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/problem"
	"nimbus/app/platform/web"
)

// Handlers serve a landing zone's Proxmox API access: its page and its API.
type Handlers struct {
	svc *Service
}

// NewHandlers returns the handlers of svc.
func NewHandlers(svc *Service) *Handlers { return &Handlers{svc: svc} }

// Routes registers a landing zone's Proxmox API access under the zone's path; seen answers 404
// for a zone the actor cannot see.
func (h *Handlers) Routes(pages, api *echo.Group, seen echo.MiddlewareFunc) {
	pages.GET("/landing-zones/:id/proxmox-access", h.Page, seen)
	pages.POST("/landing-zones/:id/proxmox-access", h.SetForm, seen)
	pages.POST("/landing-zones/:id/proxmox-access/check", h.CheckForm, seen)
	pages.POST("/landing-zones/:id/proxmox-access/remove", h.RemoveForm, seen)
	api.GET("/landing-zones/:id/proxmox-access", h.GetAPI, seen)
	api.PUT("/landing-zones/:id/proxmox-access", h.SetAPI, seen)
	api.POST("/landing-zones/:id/proxmox-access/check", h.CheckAPI, seen)
	api.DELETE("/landing-zones/:id/proxmox-access", h.RemoveAPI, seen)
}

// GetAPI answers GET /api/v1/landing-zones/{id}/proxmox-access.
func (h *Handlers) GetAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	a, err := h.svc.Get(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	if a == nil {
		return problem.ErrNotFound
	}
	return c.JSON(http.StatusOK, a)
}

// SetAPI answers PUT /api/v1/landing-zones/{id}/proxmox-access {"endpoint", "token_id",
// "secret", "ca_cert"}: 200 with what the API said, or 422 naming the field it refuses.
func (h *Handlers) SetAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	var in NewAccess
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	a, err := h.svc.Set(web.Ctx(c), web.Actor(c), id, in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, a)
}

// CheckAPI answers POST /api/v1/landing-zones/{id}/proxmox-access/check: the API asked again.
func (h *Handlers) CheckAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	a, err := h.svc.Recheck(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, a)
}

// RemoveAPI answers DELETE /api/v1/landing-zones/{id}/proxmox-access.
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
