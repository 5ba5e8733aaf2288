package deploy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/component"
	"nimbus/app/problem"
	"nimbus/app/resolver"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/jobs/saga"
)

// Gate holds back an operation that needs people's approval before it changes anything. The
// worker asks it after the preview, in the transaction that parks the operation when it must
// wait, so that a request to approve is never seen without its operation waiting for it.
type Gate interface {
	// Hold reports whether the operation must wait: the first time, it records what the
	// operation waits for; once approved, it lets it go on. A refusal it cannot get past is a
	// problem (a validation error); any other error may pass.
	Hold(ctx context.Context, q *dbgen.Queries, op dbgen.Operation, dep dbgen.GetDeploymentRow) (bool, error)
}

// Gated returns the worker with its operations held at gate; without one, none waits.
func (w *Worker) Gated(gate Gate) *Worker {
	w.gate = gate
	return w
}

// approve is the step between the preview and the first change: it passes when no approval is
// needed or enough was given, and otherwise parks the operation — its lease given up, its job
// ended, the deployment showing resting meanwhile — until a decision queues it again.
func (w *Worker) approve(ctx context.Context, op dbgen.Operation, lease uuid.UUID, resting string) error {
	if w.gate == nil {
		return nil
	}
	parked := false
	err := db.Tx(ctx, w.pool, func(q *dbgen.Queries) error {
		dep, err := q.GetDeployment(ctx, op.DeploymentID)
		if err != nil {
			return err
		}
		wait, err := w.gate.Hold(ctx, q, op, dep)
		if err != nil || !wait {
			return err
		}
		n, err := q.ParkOperation(ctx, dbgen.ParkOperationParams{ID: op.ID, Lease: uuid.NullUUID{UUID: lease, Valid: true}})
		if err != nil {
			return err
		}
		if n == 0 {
			// Cancelled before the heartbeat passed it on: it ends, undone, rather than wait.
			if now, err := q.GetOperation(ctx, op.ID); err == nil && now.CancelRequestedAt != nil {
				return saga.ErrCancelled
			}
			return errLeaseLost
		}
		parked = true
		return q.SetDeploymentStatus(ctx, dbgen.SetDeploymentStatusParams{ID: dep.ID, Status: resting})
	})
	switch {
	case problem.FieldOf(err) != "" || errors.Is(err, saga.ErrCancelled):
		return err
	case err != nil:
		return saga.Transient(fmt.Errorf("approval: %w", err))
	case parked:
		return fmt.Errorf("approval: %w", saga.ErrParked)
	}
	return nil
}

// resting is what a deployment shows while an operation on it waits for approval: what it
// showed before the operation began. A run that began before (and crashed) left its running
// status behind; then it is what the deployment's history says.
func resting(ctx context.Context, q *dbgen.Queries, dep dbgen.GetDeploymentRow) (string, error) {
	if !slices.Contains(slices.Collect(maps.Values(runningStatus)), dep.Status) {
		return dep.Status, nil
	}
	deployed, err := q.HasBeenDeployed(ctx, dep.ID)
	if deployed {
		return "deployed", err
	}
	return "pending", err
}

// ErrNotWaiting refuses to end an operation that no longer awaits approval.
var ErrNotWaiting = problem.Invalid("operation", "state", "the operation no longer awaits approval")

// EndWaiting ends an operation that awaits approval without running it, in the caller's
// transaction: it ends as status says, with reason as its error; what its resolvers handed it
// goes back; a deployment that a first deploy was to make is left as a failed first deploy
// leaves it, any other as it was; an environment waiting for the deployment goes on.
func EndWaiting(ctx context.Context, tx pgx.Tx, jobs component.JobInserter, id uuid.UUID, status, reason string) error {
	q := dbgen.New(tx)
	op, err := q.GetOperation(ctx, id)
	if err != nil {
		return err
	}
	if err := advance(ctx, tx, func() (component.JobInserter, error) { return jobs, nil }, op.DeploymentID); err != nil {
		return err
	}
	n, err := q.EndWaitingOperation(ctx, dbgen.EndWaitingOperationParams{ID: id, Status: status, Error: reason})
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotWaiting
	}
	if err := resolver.ReleaseOperation(ctx, q, id); err != nil {
		return err
	}
	if op.Kind == "deploy" {
		return q.SetDeploymentStatus(ctx, dbgen.SetDeploymentStatusParams{ID: op.DeploymentID, Status: "failed"})
	}
	return nil
}
