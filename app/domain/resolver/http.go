package resolver

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/problem"
	"nimbus/app/platform/web"
)

// Handlers serves the resolver configuration pages and API.
type Handlers struct{ svc *Service }

// NewHandlers returns the handlers for svc.
func NewHandlers(svc *Service) *Handlers { return &Handlers{svc: svc} }

// ListAPI answers GET /api/v1/environments/{id}/resolvers.
func (h *Handlers) ListAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	configs, err := h.svc.Configs(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"resolvers": configs})
}

// SetAPI answers PUT /api/v1/environments/{id}/resolvers/{type}, whose body is the resolver's
// configuration, with the stored configuration.
func (h *Handlers) SetAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	// Who asks is checked before a byte of the body is read.
	if err := h.svc.MaySetConfig(web.Ctx(c), web.Actor(c), id); err != nil {
		return err
	}
	body, err := readConfig(c)
	if err != nil {
		return err
	}
	cfg, err := h.svc.SetConfig(web.Ctx(c), web.Actor(c), id, c.Param("type"), body)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, cfg)
}

// readConfig reads a resolver's configuration from the request's body.
func readConfig(c echo.Context) (json.RawMessage, error) {
	body, err := web.ReadBody(c)
	if err != nil {
		return nil, err
	}
	if !json.Valid(body) {
		return nil, problem.Invalid("config", "json", "the body must be the resolver's configuration as a JSON object")
	}
	return body, nil
}

// NextNameAPI answers GET /api/v1/environments/{id}/resolvers/naming/next?pattern= with the
// name the pattern would give next.
func (h *Handlers) NextNameAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	name, err := h.svc.NextName(web.Ctx(c), web.Actor(c), id, c.QueryParam("pattern"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"name": name})
}

// ZoneListAPI answers GET /api/v1/landing-zones/{id}/resolvers.
func (h *Handlers) ZoneListAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	configs, err := h.svc.ZoneConfigs(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"resolvers": configs})
}

// ZoneSetAPI answers PUT /api/v1/landing-zones/{id}/resolvers/{type}, whose body is the
// resolver's configuration for every environment of the zone that does not override it.
func (h *Handlers) ZoneSetAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	// Only provider admins see a zone (the route's guard), and they may configure it.
	body, err := readConfig(c)
	if err != nil {
		return err
	}
	cfg, err := h.svc.SetZoneConfig(web.Ctx(c), web.Actor(c), id, c.Param("type"), body)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, cfg)
}

// ClearAPI answers DELETE /api/v1/environments/{id}/resolvers/{type}: the environment's own
// configuration goes, and its landing zone's applies again.
func (h *Handlers) ClearAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	if err := h.svc.ClearConfig(web.Ctx(c), web.Actor(c), id, c.Param("type")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
