package approval

import (
	"context"
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"nimbus/app/domain/policy"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/cursor"
	"nimbus/app/kernel/problem"
	"nimbus/app/orchestration/deploy"
	"nimbus/app/platform/web"
)

// Handlers serves the approval pages and API.
type Handlers struct {
	svc *Service
	ops *deploy.Service // the operations requests are about: their plans
}

// NewHandlers returns the handlers for svc; ops reads the plans of the operations.
func NewHandlers(svc *Service, ops *deploy.Service) *Handlers {
	return &Handlers{svc: svc, ops: ops}
}

// ListAPI answers GET /api/v1/approvals?status=&before=&limit=, newest first; next, when there is
// one, is the URL of the page after.
func (h *Handlers) ListAPI(c echo.Context) error {
	v := &problem.ValidationError{}
	at, limit := web.ListPosition(c, v)
	if err := v.Err(); err != nil {
		return err
	}
	list, err := h.svc.ListPage(web.Ctx(c), web.Actor(c), c.QueryParam("status"), at, limit)
	if err != nil {
		return err
	}
	out := map[string]any{"approvals": list}
	if next := web.NextPage(c, list, limit, func(r Request) cursor.Cursor { return cursor.Cursor{At: r.CreatedAt, ID: r.ID} }); next != "" {
		out["next"] = next
	}
	return c.JSON(http.StatusOK, out)
}

// withPlan is a request with what its operation's preview plans for each resource.
type withPlan struct {
	Detail
	Resources []deploy.Resource `json:"resources"`
	Policy    *policy.Check     `json:"policy,omitempty"`
}

// GetAPI answers GET /api/v1/approvals/{id} with the request, its parameters, its decisions
// and the plan its approvers judge.
func (h *Handlers) GetAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	d, plan, err := h.detail(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, withPlan{Detail: d, Resources: plan.Resources, Policy: plan.Policy})
}

func (h *Handlers) detail(ctx context.Context, actor access.Principal, id uuid.UUID) (Detail, deploy.Detail, error) {
	d, err := h.svc.Get(ctx, actor, id)
	if err != nil {
		return Detail{}, deploy.Detail{}, err
	}
	plan, err := h.ops.Detail(ctx, actor, d.OperationID)
	if err != nil {
		return d, plan, err
	}
	for i, sl := range d.Slots {
		p, err := h.ops.Detail(ctx, actor, sl.OperationID)
		if err != nil {
			return d, plan, err
		}
		d.Slots[i].Resources, d.Slots[i].Policy = p.Resources, p.Policy
	}
	return d, plan, nil
}

// decision is the body of an approval or a rejection.
type decision struct {
	Comment string `json:"comment"`
}

// ApproveAPI answers POST /api/v1/approvals/{id}/approve with the request.
func (h *Handlers) ApproveAPI(c echo.Context) error { return h.decideAPI(c, h.svc.Approve) }

// RejectAPI answers POST /api/v1/approvals/{id}/reject with the request.
func (h *Handlers) RejectAPI(c echo.Context) error { return h.decideAPI(c, h.svc.Reject) }

type decideFunc func(context.Context, access.Principal, uuid.UUID, string) (Detail, error)

func (h *Handlers) decideAPI(c echo.Context, decide decideFunc) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	var body decision
	if c.Request().ContentLength != 0 {
		if err := web.DecodeJSON(c, &body); err != nil {
			return err
		}
	}
	d, err := decide(web.Ctx(c), web.Actor(c), id, body.Comment)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, d)
}

// PoliciesAPI answers GET /api/v1/approval-policies.
func (h *Handlers) PoliciesAPI(c echo.Context) error {
	list, err := h.svc.Policies(web.Ctx(c), web.Actor(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"policies": list})
}

// CreatePolicyAPI answers POST /api/v1/approval-policies with 201 and the policy.
func (h *Handlers) CreatePolicyAPI(c echo.Context) error {
	var in NewPolicy
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	p, err := h.svc.CreatePolicy(web.Ctx(c), web.Actor(c), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, p)
}

// DeletePolicyAPI answers DELETE /api/v1/approval-policies/{id} with 204.
func (h *Handlers) DeletePolicyAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	if err := h.svc.DeletePolicy(web.Ctx(c), web.Actor(c), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
