package deploy

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"nimbus/app/problem"
	"nimbus/app/web"
	"nimbus/views"
)

// Handlers serves the deployment API.
type Handlers struct{ svc *Service }

// NewHandlers returns the handlers for svc.
func NewHandlers(svc *Service) *Handlers { return &Handlers{svc: svc} }

// CreateAPI answers POST /api/v1/deployments with 202, the deployment and its operation.
func (h *Handlers) CreateAPI(c echo.Context) error {
	var req Request
	if err := web.DecodeJSON(c, &req); err != nil {
		return err
	}
	d, op, err := h.svc.Deploy(web.Ctx(c), web.Actor(c), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, map[string]any{"deployment": d, "operation": op})
}

// ListAPI answers GET /api/v1/deployments.
func (h *Handlers) ListAPI(c echo.Context) error {
	ds, err := h.svc.List(web.Ctx(c), web.Actor(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"deployments": ds})
}

// GetAPI answers GET /api/v1/deployments/{id}.
func (h *Handlers) GetAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	d, err := h.svc.Get(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, d)
}

// DestroyAPI answers POST /api/v1/deployments/{id}/destroy with 202 and the operation.
func (h *Handlers) DestroyAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	op, err := h.svc.Destroy(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, op)
}

// OperationsAPI answers GET /api/v1/operations?deployment_id=.
func (h *Handlers) OperationsAPI(c echo.Context) error {
	id, err := uuid.Parse(c.QueryParam("deployment_id"))
	if err != nil {
		return problem.Invalid("deployment_id", "uuid", "give the ID of the deployment whose operations to list")
	}
	ops, err := h.svc.Operations(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"operations": ops})
}

// OperationAPI answers GET /api/v1/operations/{id}.
func (h *Handlers) OperationAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	op, err := h.svc.Operation(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, op)
}

// LogsAPI answers GET /api/v1/operations/{id}/logs?after=N with the next lines.
func (h *Handlers) LogsAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	after, _ := strconv.ParseInt(c.QueryParam("after"), 10, 64)
	lines, err := h.svc.Logs(web.Ctx(c), web.Actor(c), id, after)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"lines": lines})
}

// CancelAPI answers POST /api/v1/operations/{id}/cancel with 202 and the operation.
func (h *Handlers) CancelAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	op, err := h.svc.Cancel(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, op)
}

// ListPage shows the deployments the viewer may see.
func (h *Handlers) ListPage(c echo.Context) error {
	ds, err := h.svc.List(web.Ctx(c), web.Actor(c))
	if err != nil {
		return err
	}
	rows := make([]views.DeploymentRow, len(ds))
	for i, d := range ds {
		outputs, _ := json.Marshal(d.Outputs)
		rows[i] = views.DeploymentRow{Environment: d.Environment, Name: d.Name, Component: d.Component, Version: d.Version,
			Status: d.Status, Outputs: string(outputs), Created: d.CreatedAt}
	}
	return web.Render(c, http.StatusOK, views.Deployments(web.Page(c, "Deployments"), rows))
}
