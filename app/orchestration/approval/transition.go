package approval

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/outbox"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// Status is where a request stands: pending until decided, expired or void (the deployment
// changed after its preview); cancelled with its operation.
type Status string

// The statuses of a request.
const (
	Pending   Status = "pending"
	Approved  Status = "approved"
	Rejected  Status = "rejected"
	Expired   Status = "expired"
	Void      Status = "void"
	Cancelled Status = "cancelled"
)

// Machine is a request's life. This file holds its moves, and the decisions that lead to
// them: the only code that writes either.
var Machine = lifecycle.Machine[Status]{
	Name: "approval request", Table: "approval_requests", Column: "status", Writer: "app/orchestration/approval/transition.go", Start: Pending,
	Moves: map[Status][]Status{Pending: {Approved, Rejected, Expired, Void, Cancelled}},
}

// Statuses are the statuses a list of requests may be filtered by, in the order a menu offers them.
var Statuses = []string{string(Pending), string(Approved), string(Rejected), string(Expired), string(Void), string(Cancelled)}

// open records the request of an operation that has just been previewed.
func open(ctx context.Context, q *dbgen.Queries, p dbgen.OpenApprovalRequestParams) (dbgen.ApprovalRequest, error) {
	return q.OpenApprovalRequest(ctx, p)
}

// decide records one approver's decision on a pending request.
func decide(ctx context.Context, q *dbgen.Queries, p dbgen.RecordApprovalDecisionParams) error {
	return q.RecordApprovalDecision(ctx, p)
}

// closeAs ends a pending request as to; a request decided meanwhile is left as it is.
func closeAs(ctx context.Context, q *dbgen.Queries, id uuid.UUID, to Status) error {
	_, err := q.CloseApprovalRequest(ctx, dbgen.CloseApprovalRequestParams{ID: id, Status: string(to)})
	return err
}

// Withdraw closes the request of an operation cancelled while it waited for approval: the
// approvals' reaction to deployment.cancelled. A request decided meanwhile is left as it is.
func Withdraw(ctx context.Context, tx pgx.Tx, e outbox.Logged) error {
	operation, err := e.ID("operation")
	if err != nil {
		return err
	}
	return db.Queries(tx).CancelApprovalRequestOf(ctx, operation)
}
