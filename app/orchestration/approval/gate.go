package approval

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/outbox"
	"nimbus/app/kernel/problem"
	"nimbus/app/orchestration/deploy"
	"nimbus/db/dbgen"
)

// Gate holds back the operations that approval policies bind, for the deploy worker.
type Gate struct {
	ttl time.Duration
}

// NewGate returns a gate whose requests expire after ttl (DefaultTTL when not positive).
func NewGate(ttl time.Duration) *Gate {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return &Gate{ttl: ttl}
}

// Hold reports whether the operation must wait for approval: it asks once for what the
// policies binding it need then, and lets it go once that is given. A policy made or removed
// while an operation waits does not change what it waits for.
//
// The operations of one stack run ask once between them: the first one held opens the run's
// request, for the strictest of what the policies binding any step of the run need, and the
// others wait on that request, or go once it is approved.
func (g *Gate) Hold(ctx context.Context, q *dbgen.Queries, op deploy.Gated) (bool, error) {
	r, err := q.CurrentApprovalRequest(ctx, op.Operation)
	switch {
	case err == nil:
		return standing(ctx, q, r)
	case !errors.Is(err, pgx.ErrNoRows):
		return false, err
	}
	rows, err := q.ApprovalPoliciesFor(ctx, dbgen.ApprovalPoliciesForParams{Kind: op.Kind, ComponentID: op.Component, EnvironmentID: op.Environment})
	if err != nil {
		return false, err
	}
	if n, _ := need(rows); n == 0 {
		return false, nil
	}
	run, err := q.RunOfOperation(ctx, uuid.NullUUID{UUID: op.Operation, Valid: true})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return true, g.open(ctx, q, op, uuid.Nil, rows)
	case err != nil:
		return false, err
	}
	if r, err := q.CurrentRunApprovalRequest(ctx, uuid.NullUUID{UUID: run, Valid: true}); err == nil {
		return standing(ctx, q, r)
	} else if !errors.Is(err, pgx.ErrNoRows) {
		return false, err
	}
	all, err := q.RunApprovalPolicies(ctx, run)
	if err != nil {
		return false, err
	}
	for _, p := range all {
		rows = append(rows, dbgen.ApprovalPoliciesForRow(p))
	}
	err = g.open(ctx, q, op, run, rows)
	if errors.Is(err, pgx.ErrNoRows) {
		// Another operation of the run opened its request a moment ago, and it waits on that.
		r, err := q.CurrentRunApprovalRequest(ctx, uuid.NullUUID{UUID: run, Valid: true})
		if err != nil {
			return false, err
		}
		return standing(ctx, q, r)
	}
	return true, err
}

// standing is what an operation does with the request it waits on: waits while it is
// pending, goes once approved, and ends when it was decided against: rejected, as those that
// waited on it did, when it was rejected or expired (a slot of a stack run that was still
// previewing then).
func standing(ctx context.Context, q *dbgen.Queries, r dbgen.ApprovalRequest) (bool, error) {
	switch Status(r.Status) {
	case Pending:
		return true, nil
	case Approved:
		return false, nil
	case Expired:
		return false, &deploy.Rejection{Reason: expiredReason(r.ExpiresAt)}
	case Rejected:
		decisions, err := q.ApprovalDecisions(ctx, r.ID)
		if err != nil {
			return false, err
		}
		for _, d := range decisions {
			if d.Decision == "reject" {
				return false, &deploy.Rejection{Reason: rejectedReason(d.Email, d.Comment)}
			}
		}
	}
	what := "its approval request"
	if r.RunID.Valid {
		what = "its stack run's approval request"
	}
	return false, problem.Invalid("operation", "approval", "%s is %s", what, r.Status)
}

// open records the request of the operation, or of its stack run when run is set, for what
// the policies ask together, and tells subscribers. pgx.ErrNoRows says the run's request was
// opened by another of its operations first.
func (g *Gate) open(ctx context.Context, q *dbgen.Queries, op deploy.Gated, run uuid.UUID, rows []dbgen.ApprovalPoliciesForRow) error {
	n, role := need(rows)
	req, err := open(ctx, q, dbgen.OpenApprovalRequestParams{OperationID: op.Operation, ApprovalsRequired: int32(n),
		ApproverRole: string(role), TtlSeconds: g.ttl.Seconds(), RequesterMayApprove: ownAllowed(rows),
		RunID: uuid.NullUUID{UUID: run, Valid: run != uuid.Nil}})
	if err != nil {
		return err
	}
	data := map[string]any{"request": req.ID, "operation": op.Operation, "kind": op.Kind, "approvals_required": n, "approver_role": role}
	if run != uuid.Nil {
		data["run"], data["stack_instance"] = run, op.Instance
	}
	return outbox.Emit(ctx, q, outbox.Event{Type: "approval.requested", Subject: op.Name, Tenant: op.Tenant, Environment: op.Environment,
		Instance: op.Instance, Deployment: op.Deployment, Data: data})
}

// Binds reports whether the operation has a request, or policies that will ask for one.
func (g *Gate) Binds(ctx context.Context, q *dbgen.Queries, op deploy.Gated) (bool, error) {
	if _, err := q.CurrentApprovalRequest(ctx, op.Operation); err == nil {
		return true, nil
	} else if !errors.Is(err, pgx.ErrNoRows) {
		return false, err
	}
	rows, err := q.ApprovalPoliciesFor(ctx, dbgen.ApprovalPoliciesForParams{Kind: op.Kind, ComponentID: op.Component, EnvironmentID: op.Environment})
	if err != nil {
		return false, err
	}
	n, _ := need(rows)
	return n > 0, nil
}

// Need is what the policies binding some operations ask of them together; no approvals, nothing.
type Need struct {
	Approvals int
	Role      access.Role
	// RequesterMayApprove: every policy lets the requester approve their own.
	RequesterMayApprove bool
}

// Needed is what an operation of the kind on deployments of the components in the environment
// would wait for: what a stack's plan says deploying it takes, before anything is asked.
func Needed(ctx context.Context, q *dbgen.Queries, kind string, components []uuid.UUID, environment uuid.UUID) (Need, error) {
	rows, err := q.ApprovalPoliciesForAny(ctx, dbgen.ApprovalPoliciesForAnyParams{Kind: kind, ComponentIds: components, EnvironmentID: environment})
	if err != nil {
		return Need{}, fmt.Errorf("approval policies for %s: %w", kind, err)
	}
	all := make([]dbgen.ApprovalPoliciesForRow, len(rows))
	for i, r := range rows {
		all[i] = dbgen.ApprovalPoliciesForRow(r)
	}
	n, role := need(all)
	return Need{Approvals: n, Role: role, RequesterMayApprove: ownAllowed(all)}, nil
}

// ownAllowed reports whether every policy binding an operation lets its requester approve it:
// one that asks for four eyes is enough to need them.
func ownAllowed(policies []dbgen.ApprovalPoliciesForRow) bool {
	for _, p := range policies {
		if !p.RequesterMayApprove {
			return false
		}
	}
	return len(policies) > 0
}

// need is what the policies binding an operation ask of it together: the most approvals any
// asks for, from the highest role any names. No policy needs nothing.
func need(policies []dbgen.ApprovalPoliciesForRow) (int, access.Role) {
	n, role := 0, access.User
	for _, p := range policies {
		n = max(n, int(p.ApprovalsRequired))
		if r := access.Role(p.ApproverRole); r.Outranks(role) {
			role = r
		}
	}
	return n, role
}
