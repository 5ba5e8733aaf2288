package landingzone

import (
	"context"
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"nimbus/app/domain/ipam"
	"nimbus/app/kernel/access"
	"nimbus/app/platform/web"
)

// Handlers serves the landing zone pages and API.
type Handlers struct {
	svc   *Service
	pools *ipam.Service // the zone's IP pools, shown on its page
}

// NewHandlers returns the handlers for svc; pools reads the IP pools of zones.
func NewHandlers(svc *Service, pools *ipam.Service) *Handlers {
	return &Handlers{svc: svc, pools: pools}
}

// ListAPI answers GET /api/v1/landing-zones.
func (h *Handlers) ListAPI(c echo.Context) error {
	zones, err := h.svc.List(web.Ctx(c), web.Actor(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"landing_zones": zones})
}

// CreateAPI answers POST /api/v1/landing-zones with the new draft zone.
func (h *Handlers) CreateAPI(c echo.Context) error {
	var in NewZone
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	z, err := h.svc.Create(web.Ctx(c), web.Actor(c), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, z)
}

// GetAPI answers GET /api/v1/landing-zones/{id}.
func (h *Handlers) GetAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	z, err := h.svc.Get(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, z)
}

// AddSystemServiceAPI answers POST /api/v1/landing-zones/{id}/system-services.
func (h *Handlers) AddSystemServiceAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	var in MemberIn
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	m, err := h.svc.AddSystemService(web.Ctx(c), web.Actor(c), id, in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, m)
}

// AddTemplateAPI answers POST /api/v1/landing-zones/{id}/templates.
func (h *Handlers) AddTemplateAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	var in NewTemplate
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	t, err := h.svc.AddTemplate(web.Ctx(c), web.Actor(c), id, in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, t)
}

// WithdrawTemplateAPI answers DELETE /api/v1/landing-zones/{id}/templates/{template_id} with
// 204: the template opens no more environments.
func (h *Handlers) WithdrawTemplateAPI(c echo.Context) error {
	return h.removeAPI(c, "template_id", h.svc.WithdrawTemplate)
}

// RemoveSystemServiceAPI answers DELETE /api/v1/landing-zones/{id}/system-services/{service_id}
// with 204, while the zone is a draft.
func (h *Handlers) RemoveSystemServiceAPI(c echo.Context) error {
	return h.removeAPI(c, "service_id", h.svc.RemoveSystemService)
}

func (h *Handlers) removeAPI(c echo.Context, param string, remove func(context.Context, access.Principal, uuid.UUID, uuid.UUID) error) error {
	zone, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	id, err := web.IDParam(c, param)
	if err != nil {
		return err
	}
	if err := remove(web.Ctx(c), web.Actor(c), zone, id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// PublishAPI answers POST /api/v1/landing-zones/{id}/publish with 202: the zone is published
// and its system services are being deployed.
func (h *Handlers) PublishAPI(c echo.Context) error {
	return web.OnID(c, h.svc.Publish, web.Accepted[Zone](c))
}

// RetireAPI answers POST /api/v1/landing-zones/{id}/retire with 202: the zone is retired and
// its system services are being destroyed.
func (h *Handlers) RetireAPI(c echo.Context) error {
	return web.OnID(c, h.svc.Retire, web.Accepted[Zone](c))
}

// LifetimesAPI answers PUT /api/v1/landing-zones/{id}/lifetimes with the zone: how long the
// environments opened in it live, and how far they may be extended.
func (h *Handlers) LifetimesAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	var in Lifetimes
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	z, err := h.svc.SetLifetimes(web.Ctx(c), web.Actor(c), id, in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, z)
}
