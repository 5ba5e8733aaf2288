package governance

import (
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"nimbus/app/platform/web"
)

// Handlers serves the governance API and pages.
type Handlers struct{ svc *Service }

// NewHandlers returns the handlers for svc.
func NewHandlers(svc *Service) *Handlers { return &Handlers{svc: svc} }

func pathIDs(c echo.Context) (tenantID, componentID uuid.UUID, err error) {
	if tenantID, err = web.IDParam(c, "id"); err != nil {
		return uuid.Nil, uuid.Nil, err
	}
	if componentID, err = web.IDParam(c, "component_id"); err != nil {
		return uuid.Nil, uuid.Nil, err
	}
	return tenantID, componentID, nil
}

// ListAPI answers GET /api/v1/tenants/{id}/governance: the effective rule of every published
// component the tenant can use.
func (h *Handlers) ListAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	o, err := h.svc.List(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, o)
}

// GetAPI answers GET /api/v1/tenants/{id}/governance/{component_id}.
func (h *Handlers) GetAPI(c echo.Context) error {
	tenantID, componentID, err := pathIDs(c)
	if err != nil {
		return err
	}
	v, err := h.svc.Get(web.Ctx(c), web.Actor(c), tenantID, componentID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// SetAPI answers PUT /api/v1/tenants/{id}/governance/{component_id}: it replaces one scope's
// rule with the body and answers the governance that results.
func (h *Handlers) SetAPI(c echo.Context) error {
	tenantID, componentID, err := pathIDs(c)
	if err != nil {
		return err
	}
	var in Change
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	v, err := h.svc.Set(web.Ctx(c), web.Actor(c), tenantID, componentID, in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// ClearAPI answers DELETE /api/v1/tenants/{id}/governance/{component_id}?scope=provider|tenant:
// it removes that scope's rule and answers the governance that results.
func (h *Handlers) ClearAPI(c echo.Context) error {
	tenantID, componentID, err := pathIDs(c)
	if err != nil {
		return err
	}
	v, err := h.svc.Clear(web.Ctx(c), web.Actor(c), tenantID, componentID, c.QueryParam("scope"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}
