package drift

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/problem"
	"nimbus/app/platform/web"
)

// Handlers serves the drift intervals of environments and landing zones.
type Handlers struct{ svc *Service }

// NewHandlers returns the handlers for svc.
func NewHandlers(svc *Service) *Handlers { return &Handlers{svc: svc} }

// Routes registers the drift intervals' API on api.
func (h *Handlers) Routes(api *echo.Group) {
	api.GET("/environments/:id/drift-interval", h.EnvironmentDriftAPI)
	api.PUT("/environments/:id/drift-interval", h.SetEnvironmentDriftAPI)
	api.PUT("/landing-zones/:id/drift-interval", h.SetZoneDriftAPI)
}

// intervalBody is what a drift interval setting takes: a duration such as 6h, or null.
type intervalBody struct {
	DriftInterval *string `json:"drift_interval"`
}

// EnvironmentDriftAPI answers GET /api/v1/environments/{id}/drift-interval.
func (h *Handlers) EnvironmentDriftAPI(c echo.Context) error {
	return web.OnID(c, h.svc.EnvironmentInterval, func(v Setting) error { return c.JSON(http.StatusOK, v) })
}

// SetEnvironmentDriftAPI answers PUT /api/v1/environments/{id}/drift-interval: its own
// interval ("0s" turns its zone's off; null follows the zone's).
func (h *Handlers) SetEnvironmentDriftAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	ctx, actor := web.Ctx(c), web.Actor(c)
	if _, err := h.svc.EnvironmentInterval(ctx, actor, id); err != nil {
		return err // one who may not see it learns nothing of their body's faults
	}
	every, err := intervalOf(c, true)
	if err != nil {
		return err
	}
	v, err := h.svc.SetEnvironmentInterval(ctx, actor, id, every)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// SetZoneDriftAPI answers PUT /api/v1/landing-zones/{id}/drift-interval (null: never).
func (h *Handlers) SetZoneDriftAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	if !web.Actor(c).ProviderAdmin {
		return problem.ErrNotFound
	}
	every, err := intervalOf(c, false)
	if err != nil {
		return err
	}
	v, err := h.svc.SetZoneInterval(web.Ctx(c), web.Actor(c), id, every)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"drift_interval": v})
}

// intervalOf reads the body of a drift interval setting.
func intervalOf(c echo.Context, zeroAllowed bool) (*time.Duration, error) {
	var body intervalBody
	if err := web.DecodeJSON(c, &body); err != nil {
		return nil, err
	}
	if body.DriftInterval == nil {
		return nil, nil
	}
	return ParseInterval("drift_interval", *body.DriftInterval, zeroAllowed)
}
