package approval

import (
	"context"
	"errors"
	"time"

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
func (g *Gate) Hold(ctx context.Context, q *dbgen.Queries, op deploy.Gated) (bool, error) {
	r, err := q.CurrentApprovalRequest(ctx, op.Operation)
	switch {
	case err == nil && Status(r.Status) == Pending:
		return true, nil
	case err == nil && Status(r.Status) == Approved:
		return false, nil
	case err == nil:
		return false, problem.Invalid("operation", "approval", "its approval request is %s", r.Status)
	case !errors.Is(err, pgx.ErrNoRows):
		return false, err
	}
	rows, err := q.ApprovalPoliciesFor(ctx, dbgen.ApprovalPoliciesForParams{Kind: op.Kind, ComponentID: op.Component, EnvironmentID: op.Environment})
	if err != nil {
		return false, err
	}
	n, role := need(rows)
	if n == 0 {
		return false, nil
	}
	req, err := open(ctx, q, dbgen.OpenApprovalRequestParams{OperationID: op.Operation, ApprovalsRequired: int32(n),
		ApproverRole: string(role), TtlSeconds: g.ttl.Seconds(), RequesterMayApprove: ownAllowed(rows)})
	if err != nil {
		return false, err
	}
	return true, outbox.Emit(ctx, q, outbox.Event{Type: "approval.requested", Subject: op.Name, Tenant: op.Tenant, Environment: op.Environment,
		Instance: op.Instance, Deployment: op.Deployment, Data: map[string]any{"request": req.ID, "operation": op.Operation, "kind": op.Kind,
			"approvals_required": n, "approver_role": role}})
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
