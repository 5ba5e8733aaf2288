// Package deployweb is the HTTP face of package deploy: the pages of deployments and their
// operations, the deploy dialog, an operation's live stream and the JSON API, with the words
// they say an operation in. Everything it shows or changes goes through deploy.Service, which
// decides who may; the approval queue and the stack instance wizard show a plan with its
// tables (ResourceTable, PlanTable).
package deployweb

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/problem"
	"nimbus/app/orchestration/deploy"
	"nimbus/app/platform/web"
	"nimbus/db/listen"
)

// Handlers serves the deployment pages and API.
type Handlers struct {
	svc      *deploy.Service
	hub      *listen.Hub
	done     <-chan struct{} // closed when the server stops, ending the event streams
	maxState int64           // the largest state a restore accepts, in bytes
	// recheck is the longest an open stream goes without reading again and checking that its
	// viewer is still signed in and may still see the operation.
	recheck time.Duration
}

// DefaultStreamRecheck is how often an open stream checks its viewer at the least; it also
// does whenever it wakes.
const DefaultStreamRecheck = 15 * time.Second

// NewHandlers returns the handlers for svc; hub wakes the operation streams, which end when
// done is closed. maxState caps a restored state in bytes (DefaultMaxStateSize when 0).
func NewHandlers(svc *deploy.Service, hub *listen.Hub, done <-chan struct{}, maxState int64) *Handlers {
	if maxState <= 0 {
		maxState = DefaultMaxStateSize
	}
	return &Handlers{svc: svc, hub: hub, done: done, maxState: maxState, recheck: DefaultStreamRecheck}
}

// RecheckStreams sets how often at the least an open stream checks that its viewer is still
// signed in and may still see what it shows; zero keeps the default.
func (h *Handlers) RecheckStreams(every time.Duration) *Handlers {
	if every > 0 {
		h.recheck = every
	}
	return h
}

// CreateAPI answers POST /api/v1/deployments with 202, the deployment and its operation.
func (h *Handlers) CreateAPI(c echo.Context) error {
	var req deploy.Request
	if err := web.DecodeJSON(c, &req); err != nil {
		return err
	}
	d, op, err := h.svc.Deploy(web.Ctx(c), web.Actor(c), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, map[string]any{"deployment": d, "operation": op})
}

// ListAPI answers GET /api/v1/deployments?environment_id=&component_id=&status=&before=&limit=,
// newest first; next, when there is one, is the URL of the page after.
func (h *Handlers) ListAPI(c echo.Context) error {
	f, err := filter(c, deploymentStatuses)
	if err != nil {
		return err
	}
	ds, err := h.svc.List(web.Ctx(c), web.Actor(c), f)
	if err != nil {
		return err
	}
	out := map[string]any{"deployments": ds}
	if next := web.NextPage(c, ds, f.Limit, f.DeploymentPlace); next != "" {
		out["next"] = next
	}
	return c.JSON(http.StatusOK, out)
}

// filter reads the list filters of a query string, refusing malformed ones by name.
func filter(c echo.Context, statuses []string) (deploy.Filter, error) {
	var f deploy.Filter
	v := &problem.ValidationError{}
	for name, into := range map[string]*uuid.UUID{"environment_id": &f.EnvironmentID, "component_id": &f.ComponentID, "deployment_id": &f.DeploymentID} {
		if s := c.QueryParam(name); s != "" {
			id, err := uuid.Parse(s)
			if err != nil {
				v.Add(name, "uuid", "is not an ID")
			}
			*into = id
		}
	}
	f.Status, f.Kind = c.QueryParam("status"), c.QueryParam("kind")
	if f.Status != "" && !slices.Contains(statuses, f.Status) {
		v.Add("status", "enum", "must be one of %s", strings.Join(statuses, ", "))
	}
	if f.Kind != "" && !slices.Contains(kinds, f.Kind) {
		v.Add("kind", "enum", "must be one of %s", strings.Join(kinds, ", "))
	}
	f.Before, f.Limit = web.ListPosition(c, v)
	return f, v.Err()
}

// What a list may be filtered by, in the order errors and pages name them.
var (
	kinds              = deploy.Kinds()
	deploymentStatuses = deploy.DeploymentStatuses()
	operationStatuses  = deploy.Statuses()
)

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

// ActionAPI answers POST /api/v1/deployments/{id}/{preview|deploy|update|upgrade|refresh|destroy}
// with 202 and the queued operation. The body, where the action takes one, is a Change.
func (h *Handlers) ActionAPI(kind string) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := web.IDParam(c, "id")
		if err != nil {
			return err
		}
		var ch deploy.Change
		if c.Request().ContentLength != 0 {
			if err := web.DecodeJSON(c, &ch); err != nil {
				return web.Unseen(c, h.svc.Get, err)
			}
		}
		op, err := h.act(c, kind, id, ch) // each looks the deployment up on behalf of the actor first
		if err != nil {
			return err
		}
		return c.JSON(http.StatusAccepted, op)
	}
}

func (h *Handlers) act(c echo.Context, kind string, id uuid.UUID, ch deploy.Change) (deploy.Operation, error) {
	ctx, actor := web.Ctx(c), web.Actor(c)
	switch kind {
	case "preview":
		return h.svc.Preview(ctx, actor, id, ch)
	case "deploy":
		return h.svc.Start(ctx, actor, id, ch)
	case "update":
		return h.svc.Update(ctx, actor, id, ch)
	case "upgrade":
		return h.svc.Upgrade(ctx, actor, id, ch)
	case "refresh":
		return h.svc.Refresh(ctx, actor, id)
	}
	return h.svc.Destroy(ctx, actor, id)
}

// OperationsAPI answers GET /api/v1/operations?deployment_id=&status=&kind=&before=&limit=,
// newest first; next, when there is one, is the URL of the page after.
func (h *Handlers) OperationsAPI(c echo.Context) error {
	f, err := filter(c, operationStatuses)
	if err != nil {
		return err
	}
	ops, err := h.svc.Operations(web.Ctx(c), web.Actor(c), f)
	if err != nil {
		return err
	}
	out := map[string]any{"operations": ops}
	if next := web.NextPage(c, ops, f.Limit, f.OperationPlace); next != "" {
		out["next"] = next
	}
	return c.JSON(http.StatusOK, out)
}

// OperationAPI answers GET /api/v1/operations/{id} with its steps and resources.
func (h *Handlers) OperationAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	op, err := h.svc.Detail(web.Ctx(c), web.Actor(c), id)
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

// FullLogAPI answers GET /api/v1/operations/{id}/log with the whole log as text.
func (h *Handlers) FullLogAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	r, err := h.svc.FullLog(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	defer r.Close()
	c.Response().Header().Set("Content-Disposition", `attachment; filename="`+id.String()+`.log"`)
	return c.Stream(http.StatusOK, "text/plain; charset=utf-8", r)
}

// CancelAPI answers POST /api/v1/operations/{id}/cancel with 202 and the operation.
func (h *Handlers) CancelAPI(c echo.Context) error {
	return web.OnID(c, h.svc.Cancel, web.Accepted[deploy.Operation](c))
}

// StateAPI answers GET /api/v1/deployments/{id}/state with the stack's state export.
func (h *Handlers) StateAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	state, err := h.svc.State(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Content-Disposition", `attachment; filename="`+id.String()+`.state.json"`)
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, state)
}

// DefaultMaxStateSize caps a restored state when no other limit is given.
const DefaultMaxStateSize int64 = 256 << 20

// RestoreStateAPI answers PUT /api/v1/deployments/{id}/state, whose body is a state export,
// with 204. One who may not restore the deployment's state is refused before a byte of the
// body is read. A body over the limit is refused by its Content-Length, or, sent without one,
// as soon as it passes the limit. The state goes to a temporary file, not memory, on its way
// to the engine.
func (h *Handlers) RestoreStateAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	ctx, actor, body := web.Ctx(c), web.Actor(c), c.Request().Body
	if err := h.svc.MayRestoreState(ctx, actor, id); err != nil {
		return err
	}
	if c.Request().ContentLength > h.maxState {
		return h.stateTooLarge(c)
	}
	f, err := os.CreateTemp("", "nimbus-state-*.json")
	if err != nil {
		return fmt.Errorf("restore state: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	n, err := io.Copy(f, io.LimitReader(body, h.maxState+1))
	if err != nil {
		return problem.Invalid("state", "body", "the body could not be read: %v", err)
	}
	if n > h.maxState {
		return h.stateTooLarge(c)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("restore state: %w", err)
	}
	if err := h.svc.RestoreState(ctx, actor, id, f, n); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// stateTooLarge refuses a state over the limit. The rest of the body is never read: the
// connection closes after the answer.
func (h *Handlers) stateTooLarge(c echo.Context) error {
	c.Response().Header().Set("Connection", "close")
	return problem.Invalid("state", "max_size", "is larger than the limit of %s (--max-state-size / NIMBUS_MAX_STATE_SIZE)", Size(h.maxState))
}

// Size says a number of bytes as people read it: 256 MiB, 64 KiB, 1000 bytes.
func Size(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return strconv.FormatInt(n>>30, 10) + " GiB"
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// DriftCheckAPI answers POST /api/v1/deployments/{id}/drift-checks with 202 and the queued check.
func (h *Handlers) DriftCheckAPI(c echo.Context) error {
	return web.OnID(c, h.svc.CheckDrift, web.Accepted[deploy.Operation](c))
}

// ReconcileAPI answers POST /api/v1/deployments/{id}/reconcile with 202 and the queued update
// that puts back what drifted.
func (h *Handlers) ReconcileAPI(c echo.Context) error {
	return web.OnID(c, h.svc.Reconcile, web.Accepted[deploy.Operation](c))
}
