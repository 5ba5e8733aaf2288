package deploy

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/audit"
	"nimbus/db"
)

// Cancel stops an operation: a queued one never starts; a running one is interrupted at its
// next heartbeat and undoes what it did; one awaiting approval ends at once, and its request is
// withdrawn moments later. Those who may deploy in the tenant may cancel.
func (s *Service) Cancel(ctx context.Context, actor access.Principal, operationID uuid.UUID) (Operation, error) {
	op, err := s.Operation(ctx, actor, operationID)
	if err != nil {
		return Operation{}, err
	}
	d, err := s.get(ctx, actor, op.DeploymentID)
	if err != nil {
		return Operation{}, err
	}
	if !actor.Can(access.ComponentDeploy, d.TenantID) {
		return Operation{}, problem.ErrForbidden
	}
	err = db.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// An operation that ends here, not in a worker, lets its environment go on.
		if err := advance(ctx, tx, s.inserter, op.DeploymentID); err != nil {
			return err
		}
		q := db.Queries(tx)
		stopped, err := cancelQueued(ctx, q, operationID)
		if err != nil {
			return err
		}
		if !stopped {
			if stopped, err = requestCancel(ctx, q, operationID); err != nil {
				return err
			}
		}
		if !stopped && op.Status == AwaitingApproval {
			if stopped, err = s.cancelWaiting(ctx, tx, actor, operationID); err != nil {
				return err
			}
		}
		if !stopped {
			return problem.Invalid("operation", "state", "the operation has already ended (%s)", op.Status)
		}
		return audit.Record(ctx, q, actor, audit.Event{Tenant: d.TenantID, Action: "operation.cancel", TargetType: "operation",
			TargetID: operationID.String(), Diff: map[string]any{"deployment": d.Name, "kind": op.Kind}})
	})
	if err != nil {
		return Operation{}, fmt.Errorf("cancel operation: %w", err)
	}
	return s.Operation(ctx, actor, operationID)
}

// cancelWaiting ends an operation that awaits approval; it reports false when the operation
// moved on meanwhile. Its approval request is withdrawn by the approvals' reaction to the
// deployment.cancelled event.
func (s *Service) cancelWaiting(ctx context.Context, tx pgx.Tx, actor access.Principal, id uuid.UUID) (bool, error) {
	reason := fmt.Sprintf("cancelled by %s while it awaited approval", actor.Email)
	err := EndWaiting(ctx, tx, s.jobs, id, Cancelled, reason)
	if errors.Is(err, ErrNotWaiting) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	q := db.Queries(tx)
	op, err := q.GetOperation(ctx, id)
	if err != nil {
		return false, err
	}
	return true, tell(ctx, q, op, Cancelled, reason)
}
