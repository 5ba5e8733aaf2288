package policy

import (
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"nimbus/app/platform/web"
)

// Handlers serve a landing zone's policies: their pages and their API.
type Handlers struct {
	svc *Service
}

// NewHandlers returns the handlers of svc.
func NewHandlers(svc *Service) *Handlers { return &Handlers{svc: svc} }

// ListAPI answers GET /api/v1/landing-zones/{id}/policies.
func (h *Handlers) ListAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	list, err := h.svc.List(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"policies": list})
}

// GetAPI answers GET /api/v1/landing-zones/{id}/policies/{policy}.
func (h *Handlers) GetAPI(c echo.Context) error {
	id, pid, err := ids(c)
	if err != nil {
		return err
	}
	p, err := h.svc.Get(web.Ctx(c), web.Actor(c), id, pid)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, p)
}

// CreateAPI answers POST /api/v1/landing-zones/{id}/policies: 201 with the policy, or 422
// naming each field that is wrong (an expression that does not compile, with CEL's words).
func (h *Handlers) CreateAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	var in Input
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	p, err := h.svc.Create(web.Ctx(c), web.Actor(c), id, in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, p)
}

// UpdateAPI answers PUT /api/v1/landing-zones/{id}/policies/{policy}: the whole policy again.
func (h *Handlers) UpdateAPI(c echo.Context) error {
	id, pid, err := ids(c)
	if err != nil {
		return err
	}
	var in Input
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	p, err := h.svc.Update(web.Ctx(c), web.Actor(c), id, pid, in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, p)
}

// RemoveAPI answers DELETE /api/v1/landing-zones/{id}/policies/{policy}.
func (h *Handlers) RemoveAPI(c echo.Context) error {
	id, pid, err := ids(c)
	if err != nil {
		return err
	}
	if err := h.svc.Remove(web.Ctx(c), web.Actor(c), id, pid); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// VersionsAPI answers GET /api/v1/landing-zones/{id}/policies/versions: every version of the
// zone's set, newest first.
func (h *Handlers) VersionsAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	list, err := h.svc.Versions(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"versions": list})
}

// ids are the zone's and the policy's IDs of the request.
func ids(c echo.Context) (zone, policy uuid.UUID, err error) {
	if zone, err = web.IDParam(c, "id"); err != nil {
		return zone, policy, err
	}
	policy, err = web.IDParam(c, "policy")
	return zone, policy, err
}
