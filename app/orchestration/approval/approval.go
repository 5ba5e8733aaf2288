// Package approval makes chosen operations wait for people's yes: policies per landing zone,
// environment or component say which operations need how many approvals from which role; an
// operation they bind stops after its preview until approved, rejected or expired.
package approval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/app/domain/component"
	"nimbus/app/domain/policy"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/cursor"
	"nimbus/app/kernel/problem"
	"nimbus/app/orchestration/deploy"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/jobs"
)

// DefaultTTL is how long a request waits for its decisions when nobody says otherwise.
const DefaultTTL = 72 * time.Hour

// Request is an operation waiting, or having waited, for approval.
type Request struct {
	ID                uuid.UUID   `json:"id"`
	OperationID       uuid.UUID   `json:"operation_id"`
	Kind              string      `json:"kind"`
	DeploymentID      uuid.UUID   `json:"deployment_id"`
	Deployment        string      `json:"deployment"`
	EnvironmentID     uuid.UUID   `json:"environment_id"`
	Environment       string      `json:"environment"`
	TenantID          uuid.UUID   `json:"tenant_id"`
	Tenant            string      `json:"tenant"`
	RequestedBy       string      `json:"requested_by"`
	Status            Status      `json:"status"`
	Approvals         int         `json:"approvals"`
	ApprovalsRequired int         `json:"approvals_required"`
	ApproverRole      access.Role `json:"approver_role"`
	// RequesterMayApprove says the requester may approve it themselves: its policies all said
	// so, where four eyes are not to be had.
	RequesterMayApprove bool `json:"requester_may_approve"`
	// StackInstanceID and Slot name the stack instance the deployment is a slot of, if any.
	StackInstanceID *uuid.UUID `json:"stack_instance_id,omitempty"`
	StackInstance   string     `json:"stack_instance,omitempty"`
	Slot            string     `json:"slot,omitempty"`
	// RunID names the stack run the request is for: one request for all of the run's operations.
	RunID       *uuid.UUID `json:"run_id,omitempty"`
	PreviewedAt time.Time  `json:"previewed_at"`
	ExpiresAt   time.Time  `json:"expires_at"`
	DecidedAt   *time.Time `json:"decided_at"`
	CreatedAt   time.Time  `json:"created_at"`
	// CanDecide says whether the viewer may approve or reject it now.
	CanDecide bool `json:"can_decide"`
	requester uuid.NullUUID
}

// Detail is a request with what its approvers judge: the version and parameters the operation
// applies (secret ones read "[secret]"), and the decisions so far. A stack run's request has
// each operation the run has started so far in Slots, the first being the one that opened it.
type Detail struct {
	Request
	Version    int            `json:"version"`
	Parameters map[string]any `json:"parameters"`
	Decisions  []Decision     `json:"decisions"`
	Slots      []SlotPlan     `json:"slots,omitempty"`
}

// SlotPlan is one slot's operation in a stack run's request: what it applies, and the plan of
// its preview (filled by the handlers, which read operations).
type SlotPlan struct {
	Slot         string            `json:"slot"`
	OperationID  uuid.UUID         `json:"operation_id"`
	Kind         string            `json:"kind"`
	Status       string            `json:"status"`
	DeploymentID uuid.UUID         `json:"deployment_id"`
	Deployment   string            `json:"deployment"`
	Version      int               `json:"version"`
	Parameters   map[string]any    `json:"parameters"`
	Resources    []deploy.Resource `json:"resources"`
	Policy       *policy.Check     `json:"policy,omitempty"`
}

// Decision is one person's approval or rejection.
type Decision struct {
	By       string    `json:"by"`
	Decision string    `json:"decision"`
	Comment  string    `json:"comment"`
	At       time.Time `json:"at"`
}

// Service reads and decides requests and keeps the policies, on behalf of a principal.
type Service struct {
	pool *pgxpool.Pool
	jobs jobs.Queue
}

// NewService returns a Service; queue queues the operations an approval sends on.
func NewService(pool *pgxpool.Pool, queue jobs.Queue) *Service {
	return &Service{pool: pool, jobs: queue}
}

// List returns the requests of the tenants the actor belongs to (all for provider admins),
// newest first, in the given status ("" for all). A pending request past its time is expired.
func (s *Service) List(ctx context.Context, actor access.Principal, status string) ([]Request, error) {
	return s.ListPage(ctx, actor, status, cursor.Cursor{}, cursor.MaxRows)
}

// ListPage returns the requests of List made before the one at, at most limit of them.
func (s *Service) ListPage(ctx context.Context, actor access.Principal, status string, at cursor.Cursor, limit int) ([]Request, error) {
	if status != "" && !slices.Contains(Statuses, status) {
		return nil, problem.Invalid("status", "enum", "must be one of %s", strings.Join(Statuses, ", "))
	}
	rows, err := s.requests(ctx, actor, uuid.Nil, status, at, limit)
	if err != nil {
		return nil, err
	}
	out := make([]Request, len(rows))
	for i, r := range rows {
		out[i] = requestFromRow(actor, r)
	}
	return out, nil
}

// Get returns a request the actor may see, with its parameters and decisions.
func (s *Service) Get(ctx context.Context, actor access.Principal, id uuid.UUID) (Detail, error) {
	rows, err := s.requests(ctx, actor, id, "", cursor.Cursor{}, 1)
	if err != nil {
		return Detail{}, err
	}
	if len(rows) == 0 {
		return Detail{}, problem.ErrNotFound
	}
	r := rows[0]
	q := db.Queries(s.pool)
	in, err := q.ApprovalRequestInputs(ctx, id)
	if err != nil {
		return Detail{}, fmt.Errorf("inputs of approval request %s: %w", id, err)
	}
	decisions, err := q.ApprovalDecisions(ctx, id)
	if err != nil {
		return Detail{}, fmt.Errorf("decisions of approval request %s: %w", id, err)
	}
	d := Detail{Request: requestFromRow(actor, r), Version: int(in.Version), Parameters: masked(in.Parameters, in.InputSchema),
		Decisions: make([]Decision, len(decisions))}
	for i, x := range decisions {
		d.Decisions[i] = Decision{By: x.Email, Decision: x.Decision, Comment: x.Comment, At: x.CreatedAt}
	}
	if !r.RunID.Valid {
		return d, nil
	}
	ops, err := q.ApprovalRunOperations(ctx, r.RunID.UUID)
	if err != nil {
		return Detail{}, fmt.Errorf("operations of approval request %s: %w", id, err)
	}
	for _, o := range ops {
		d.Slots = append(d.Slots, SlotPlan{Slot: o.Slot, OperationID: o.ID, Kind: o.Kind, Status: o.Status, DeploymentID: o.DeploymentID,
			Deployment: o.DeploymentName, Version: int(o.Version), Parameters: masked(o.Parameters, o.InputSchema), Resources: []deploy.Resource{}})
	}
	return d, nil
}

// Waiting counts the pending requests the actor may decide and has not, for the navigation.
func (s *Service) Waiting(ctx context.Context, actor access.Principal) (int, error) {
	n, err := db.Queries(s.pool).CountApprovalsWaiting(ctx, dbgen.CountApprovalsWaitingParams{
		Viewer: actor.UserID, AllTenants: actor.ProviderAdmin,
		UserTenants:  decidingTenants(actor, access.User),
		AdminTenants: decidingTenants(actor, access.TenantAdmin),
	})
	if err != nil {
		return 0, fmt.Errorf("count waiting approvals: %w", err)
	}
	return int(n), nil
}

// decidingTenants are the tenants where the actor may decide requests that ask for role.
func decidingTenants(actor access.Principal, role access.Role) []uuid.UUID {
	out := []uuid.UUID{}
	for _, t := range actor.TenantsWithRole(role) {
		if actor.Can(access.ApprovalDecide, t) {
			out = append(out, t)
		}
	}
	return out
}

// Queue returns what the approvals page shows the actor: the newest pending requests, a page
// of them (cursor.DefaultRows), and the latest of those decided (or expired), at most recent of
// them; each newest first.
func (s *Service) Queue(ctx context.Context, actor access.Principal, recent int) (pending, decided []Request, err error) {
	if pending, err = s.ListPage(ctx, actor, string(Pending), cursor.Cursor{}, cursor.DefaultRows); err != nil {
		return nil, nil, err
	}
	rows, err := s.requests(ctx, actor, uuid.Nil, decidedOnes, cursor.Cursor{}, recent)
	if err != nil {
		return nil, nil, err
	}
	for _, r := range rows {
		decided = append(decided, requestFromRow(actor, r))
	}
	return pending, decided, nil
}

// decidedOnes asks requests for those no longer pending, whatever their status.
const decidedOnes = "decided"

// requests reads the requests the actor may see: one when id is set, else those in status
// (decidedOnes: any but pending).
func (s *Service) requests(ctx context.Context, actor access.Principal, id uuid.UUID, status string, at cursor.Cursor, limit int) ([]dbgen.ListApprovalRequestsRow, error) {
	tenants := append([]uuid.UUID{}, actor.TenantsWith(access.ApprovalRead)...)
	limit = cursor.Rows(limit)
	params := dbgen.ListApprovalRequestsParams{Viewer: actor.UserID, AllTenants: actor.ProviderAdmin, TenantIds: tenants,
		ID: uuid.NullUUID{UUID: id, Valid: id != uuid.Nil}, Before: at.Before(), BeforeID: at.BeforeID(), MaxRows: int32(limit)}
	switch status {
	case "":
	case decidedOnes:
		params.Decided = true
	default:
		params.Status = &status
	}
	rows, err := db.Queries(s.pool).ListApprovalRequests(ctx, params)
	if err != nil {
		return nil, fmt.Errorf("list approval requests: %w", err)
	}
	return rows, nil
}

func requestFromRow(actor access.Principal, r dbgen.ListApprovalRequestsRow) Request {
	out := Request{ID: r.ID, OperationID: r.OperationID, Kind: r.Kind, DeploymentID: r.DeploymentID, Deployment: r.DeploymentName,
		EnvironmentID: r.EnvironmentID, Environment: r.EnvironmentName, TenantID: r.TenantID, Tenant: r.TenantName, RequestedBy: r.RequestedByEmail,
		Status: Status(r.Status), Approvals: int(r.Approvals), ApprovalsRequired: int(r.ApprovalsRequired),
		ApproverRole: access.Role(r.ApproverRole), PreviewedAt: r.PreviewedAt, ExpiresAt: r.ExpiresAt, DecidedAt: r.DecidedAt,
		CreatedAt: r.CreatedAt, requester: r.RequestedBy, RequesterMayApprove: r.RequesterMayApprove,
		StackInstance: r.StackInstanceName, Slot: r.Slot}
	if r.StackInstanceID.Valid {
		out.StackInstanceID = &r.StackInstanceID.UUID
	}
	if r.RunID.Valid {
		out.RunID = &r.RunID.UUID
	}
	out.CanDecide = Status(r.Status) == Pending && !r.ViewerDecided && mayDecide(actor, r.TenantID, r.RequestedBy, out.ApproverRole, r.RequesterMayApprove) == nil
	return out
}

// mayDecide refuses, saying why, an actor who may not approve or reject a request: its
// requester (unless own says its policies let them), and anyone without the role it asks for in
// its tenant.
func mayDecide(actor access.Principal, tenant uuid.UUID, requestedBy uuid.NullUUID, role access.Role, own bool) error {
	if !own && requestedBy.Valid && requestedBy.UUID == actor.UserID {
		return &problem.Denied{Message: "you requested this operation: someone else must approve or reject it"}
	}
	if !actor.Can(access.ApprovalDecide, tenant) || !actor.HasRole(role, tenant) {
		if role == access.ProviderAdmin {
			return &problem.Denied{Message: "only a provider admin may decide this request"}
		}
		return &problem.Denied{Message: fmt.Sprintf("deciding this request takes the %s role, or a higher one, in its tenant", role.Label())}
	}
	return nil
}

// masked is the parameters an operation applies as its approvers see them: the inputs its
// version's schema marks secret read "[secret]", whatever their value.
func masked(raw json.RawMessage, schema json.RawMessage) map[string]any {
	params := map[string]any{}
	_ = json.Unmarshal(raw, &params)
	if s := component.ParseSchema("input_schema", schema, &problem.ValidationError{}); s != nil {
		for _, name := range s.Names() {
			if s.Secret(name) {
				params[name] = "[secret]"
			}
		}
	}
	return params
}

// notFound maps a missing row onto ErrNotFound.
func notFound(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return problem.ErrNotFound
	}
	return err
}
