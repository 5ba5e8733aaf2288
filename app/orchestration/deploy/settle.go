package deploy

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/domain/resolver"
	"nimbus/app/kernel/graph"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/jobs"
)

// advance asks for the next step of the graphs the deployment is in — its environment's, when
// it is being provisioned or decommissioned, its stack instance's, when a run of it is under
// way — in the transaction that ends an operation in it: the step is asked for exactly when
// the operation's end is recorded.
func advance(ctx context.Context, tx pgx.Tx, queue func() (jobs.Queue, error), deploymentID uuid.UUID) error {
	q := db.Reused(tx)
	var steps []graph.Args
	env, err := q.EnvironmentInTransition(ctx, deploymentID)
	switch {
	case err == nil:
		steps = append(steps, graph.Args{Parent: graph.ParentEnvironment, ID: env})
	case !errors.Is(err, pgx.ErrNoRows):
		return err
	}
	instance, err := q.StackInstanceInRun(ctx, deploymentID)
	switch {
	case err == nil:
		steps = append(steps, graph.Args{Parent: graph.ParentStackInstance, ID: instance})
	case !errors.Is(err, pgx.ErrNoRows):
		return err
	}
	if len(steps) == 0 {
		return nil
	}
	inserter, err := queue()
	if err != nil {
		return err
	}
	for _, args := range steps {
		if _, err := inserter.InsertTx(ctx, tx, args, nil); err != nil {
			return err
		}
	}
	return nil
}

// riverJobs queues jobs in the transactions of the worker's job, with the client running it.
func riverJobs(ctx context.Context) func() (jobs.Queue, error) {
	return func() (jobs.Queue, error) { return jobs.FromContext(ctx) }
}

// Discard lets go of a deployment that never had a stack of its own — recorded, and never
// deployed nor tried — marking it destroyed without running the engine, in the caller's
// transaction, and giving back anything resolvers handed it; its previews not started yet are
// withdrawn. Any other deployment, or one with an operation under way, is left alone and
// Discard reports false: it needs a destroy.
func Discard(ctx context.Context, q *dbgen.Queries, id uuid.UUID) (bool, error) {
	if err := q.LockDeployment(ctx, id); err != nil {
		return false, err
	}
	d, err := q.GetDeployment(ctx, id)
	if err != nil || DeploymentStatus(d.Status) != Pending {
		return false, err
	}
	if err := withdrawPreviews(ctx, q, id); err != nil {
		return false, err
	}
	for _, check := range []func(context.Context, uuid.UUID) (bool, error){q.EngineEverRan, q.AnyOperationPending} {
		if yes, err := check(ctx, id); err != nil || yes {
			return false, err
		}
	}
	if err := resolver.ReleaseDeployment(ctx, q, d.ID); err != nil {
		return false, err
	}
	if err := q.UpdateDeploymentInputs(ctx, dbgen.UpdateDeploymentInputsParams{ID: d.ID, Version: d.Version, Parameters: d.Parameters}); err != nil {
		return false, err
	}
	return true, moveDeployment(ctx, q, d.ID, Destroyed)
}
