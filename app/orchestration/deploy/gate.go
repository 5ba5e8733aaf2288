package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/domain/resolver"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/problem"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/jobs"
	"nimbus/jobs/saga"
)

// Gate holds back an operation that needs people's approval before it changes anything. The
// worker asks it after the preview, in the transaction that parks the operation when it must
// wait, so that a request to approve is never seen without its operation waiting for it.
type Gate interface {
	// Hold reports whether the operation must wait: the first time, it records what the
	// operation waits for; once approved, it lets it go on. A refusal it cannot get past is a
	// problem (a validation error); an approval turned down before the operation got to it (its
	// stack run's request, rejected or expired while it previewed) is a *Rejection; any other
	// error may pass.
	Hold(ctx context.Context, q *dbgen.Queries, op Gated) (bool, error)
	// Binds reports, before the preview, whether Hold will ask for approval or has asked: the
	// preview then saves the plan that the approvers see and the operation later applies.
	Binds(ctx context.Context, q *dbgen.Queries, op Gated) (bool, error)
}

// Rejection is a gate's answer to an operation whose approval was turned down before it got to
// the gate: it ends rejected, with Reason as its error, as the operations that waited did.
type Rejection struct{ Reason string }

func (r *Rejection) Error() string { return r.Reason }

// Gated is what a gate reads of an operation: its kind, and what and where its deployment is.
type Gated struct {
	Operation  uuid.UUID
	Kind       string
	Deployment uuid.UUID
	// Name is the deployment's.
	Name                                     string
	Component, Environment, Tenant, Instance uuid.UUID
}

func gated(op dbgen.Operation, dep dbgen.GetDeploymentRow) Gated {
	return Gated{Operation: op.ID, Kind: op.Kind, Deployment: dep.ID, Name: dep.Name, Component: dep.ComponentID,
		Environment: dep.EnvironmentID, Tenant: dep.TenantID, Instance: dep.StackInstanceID.UUID}
}

// Gated returns the worker with its operations held at gate; without one, none waits.
func (w *Worker) Gated(gate Gate) *Worker {
	w.gate = gate
	return w
}

// approve is the step between the preview and the first change: it passes when no approval is
// needed or enough was given, and otherwise parks the operation — its lease given up, its job
// ended, the deployment showing what it showed before meanwhile — until a decision queues it
// again.
func (r *run) approve(ctx context.Context, _ *saga.Run) (json.RawMessage, error) {
	if r.w.gate == nil {
		return nil, nil
	}
	parked := false
	var no *Rejection
	err := db.Tx(ctx, r.w.pool, func(q *dbgen.Queries) error {
		dep, err := q.GetDeployment(ctx, r.op.DeploymentID)
		if err != nil {
			return err
		}
		wait, err := r.w.gate.Hold(ctx, q, gated(r.op, dep))
		if errors.As(err, &no) {
			// It changed nothing: the deployment shows what it showed before, as it does for
			// the operations that waited (EndWaiting), until the ending says otherwise.
			return moveDeployment(ctx, q, dep.ID, r.resting)
		}
		if err != nil || !wait {
			return err
		}
		err = park(ctx, q, r.op.ID, r.lease)
		if errors.Is(err, lifecycle.ErrIllegalMove) {
			// Cancelled before the heartbeat passed it on: it ends, undone, rather than wait.
			if now, err := q.GetOperation(ctx, r.op.ID); err == nil && now.CancelRequestedAt != nil {
				return saga.ErrCancelled
			}
			return errLeaseLost
		}
		if err != nil {
			return err
		}
		parked = true
		return moveDeployment(ctx, q, dep.ID, r.resting)
	})
	switch {
	case problem.FieldOf(err) != "" || errors.Is(err, saga.ErrCancelled):
		return nil, err
	case err != nil:
		return nil, saga.Transient(fmt.Errorf("approval: %w", err))
	case no != nil:
		return nil, no
	case parked:
		return nil, fmt.Errorf("approval: %w", saga.ErrParked)
	}
	return nil, nil
}

// resting is what a deployment shows while an operation on it waits for approval: what it
// showed before the operation began. A run that began before (and crashed) left its running
// status behind; then it is what the deployment's history says.
func resting(ctx context.Context, q *dbgen.Queries, dep dbgen.GetDeploymentRow) (DeploymentStatus, error) {
	if status := DeploymentStatus(dep.Status); !status.busy() {
		return status, nil
	}
	deployed, err := q.HasBeenDeployed(ctx, dep.ID)
	if deployed {
		return Deployed, err
	}
	return Pending, err
}

// EndWaiting ends an operation that awaits approval without running it, in the caller's
// transaction: it ends as status says, with reason as its error; what its resolvers handed it
// goes back; a deployment that a first deploy was to make is left as a failed (or cancelled)
// first deploy leaves it, any other as it was; an environment waiting for the deployment goes on.
func EndWaiting(ctx context.Context, tx pgx.Tx, queue jobs.Queue, id uuid.UUID, status Status, reason string) error {
	q := db.Queries(tx)
	op, err := q.GetOperation(ctx, id)
	if err != nil {
		return err
	}
	if err := advance(ctx, tx, func() (jobs.Queue, error) { return queue, nil }, op.DeploymentID); err != nil {
		return err
	}
	if err := endWaiting(ctx, q, id, status, reason); err != nil {
		return err
	}
	if err := resolver.ReleaseOperation(ctx, q, id); err != nil {
		return err
	}
	if Kind(op.Kind) == KindDeploy {
		left := Broken
		if status == Cancelled {
			left = Interrupted
		}
		return moveDeployment(ctx, q, op.DeploymentID, left)
	}
	return nil
}
