package instance

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/web"
)

// Handlers serves the stack instances' API.
type Handlers struct{ svc *Service }

// NewHandlers returns the handlers for svc.
func NewHandlers(svc *Service) *Handlers { return &Handlers{svc: svc} }

// UpgradePlanAPI answers GET /api/v1/stack-instances/{id}/upgrade?version=N: what upgrading to
// version N (the latest when left out) would do to each slot.
func (h *Handlers) UpgradePlanAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	version := 0
	if s := c.QueryParam("version"); s != "" {
		if version, err = strconv.Atoi(s); err != nil || version < 1 {
			return problem.Invalid("version", "integer", "must be a version number")
		}
	}
	p, err := h.svc.UpgradePlan(web.Ctx(c), web.Actor(c), id, version)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, p)
}

// UpgradeAPI answers POST /api/v1/stack-instances/{id}/upgrade {version} with 202.
func (h *Handlers) UpgradeAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	var in struct {
		Version int `json:"version"`
	}
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	inst, err := h.svc.Upgrade(FromAPI(web.Ctx(c)), web.Actor(c), id, in.Version)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, inst)
}

var statuses = []string{string(lifecycle.InstancePending), string(lifecycle.InstanceDeploying), string(lifecycle.InstanceActive), string(lifecycle.InstanceDegraded), string(lifecycle.InstanceFailed),
	string(lifecycle.InstanceDestroying), string(lifecycle.InstanceDestroyed), string(lifecycle.InstanceUpgrading)}

// ListAPI answers GET /api/v1/stack-instances, newest first, filtered by environment_id,
// stack_id and status.
func (h *Handlers) ListAPI(c echo.Context) error {
	f, err := filterOf(c)
	if err != nil {
		return err
	}
	list, err := h.svc.List(web.Ctx(c), web.Actor(c), f)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"stack_instances": list})
}

// filterOf reads a list's filters from the query: environment_id, stack_id and status.
func filterOf(c echo.Context) (Filter, error) {
	var f Filter
	v := &problem.ValidationError{}
	for name, into := range map[string]*uuid.UUID{"environment_id": &f.EnvironmentID, "stack_id": &f.StackID} {
		if s := c.QueryParam(name); s != "" {
			id, err := uuid.Parse(s)
			if err != nil {
				v.Add(name, "uuid", "is not an ID")
			}
			*into = id
		}
	}
	if f.Status = c.QueryParam("status"); f.Status != "" && !slices.Contains(statuses, f.Status) {
		v.Add("status", "enum", "must be one of %s", strings.Join(statuses, ", "))
	}
	return f, v.Err()
}

// DeployAPI answers POST /api/v1/stack-instances with 202: the instance is recorded and its
// slots are being deployed, or with preview_only, it is pending and its slots being previewed.
func (h *Handlers) DeployAPI(c echo.Context) error {
	var req Request
	if err := web.DecodeJSON(c, &req); err != nil {
		return err
	}
	inst, err := h.svc.Deploy(FromAPI(web.Ctx(c)), web.Actor(c), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, inst)
}

// GetAPI answers GET /api/v1/stack-instances/{id}.
func (h *Handlers) GetAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	inst, err := h.svc.Get(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, inst)
}

// DestroyAPI answers DELETE /api/v1/stack-instances/{id} (and POST …/destroy) with 202.
func (h *Handlers) DestroyAPI(c echo.Context) error { return h.act(c, h.svc.Destroy) }

// RetryAPI answers POST /api/v1/stack-instances/{id}/retry with 202.
func (h *Handlers) RetryAPI(c echo.Context) error { return h.act(c, h.svc.Retry) }

// StartAPI answers POST /api/v1/stack-instances/{id}/deploy {keep_on_failure} (the body may be
// left out) with 202: the pending instance deploys.
func (h *Handlers) StartAPI(c echo.Context) error {
	var in struct {
		KeepOnFailure bool `json:"keep_on_failure"`
	}
	if c.Request().ContentLength != 0 {
		if err := web.DecodeJSON(c, &in); err != nil {
			return err
		}
	}
	return h.act(c, func(ctx context.Context, actor access.Principal, id uuid.UUID) (Instance, error) {
		return h.svc.Start(ctx, actor, id, in.KeepOnFailure)
	})
}

// DiscardAPI answers POST /api/v1/stack-instances/{id}/discard with 202: the pending instance
// is let go.
func (h *Handlers) DiscardAPI(c echo.Context) error { return h.act(c, h.svc.Discard) }

func (h *Handlers) act(c echo.Context, do func(context.Context, access.Principal, uuid.UUID) (Instance, error)) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	inst, err := do(FromAPI(web.Ctx(c)), web.Actor(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, inst)
}

// RunsAPI answers GET /api/v1/stack-instances/{id}/runs, newest first, with their steps.
func (h *Handlers) RunsAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	runs, err := h.svc.Runs(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"runs": runs})
}
