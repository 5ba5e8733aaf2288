package deploy

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/app/domain/resolver"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/graph"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/jobs"
)

// advance asks for the next step of the graphs the deployment is in — its environment's, when
// it is being provisioned or decommissioned, its stack instance's, when a run of it is under
// way — in the transaction that ends an operation in it: the step is asked for exactly when
// the operation's end is recorded.
func advance(ctx context.Context, tx pgx.Tx, queue func() (jobs.Queue, error), deploymentID uuid.UUID) error {
	q := db.Queries(tx)
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
	d, err := lockedDeployment(ctx, q, id)
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

// AbandonedAfter is how long a deployment recorded to be previewed, and never deployed, waits
// for its author to apply the preview or preview it again before the reaper discards it.
const AbandonedAfter = time.Hour

// dropFailedPreview discards, in the transaction that ends it, a deployment of its own whose
// preview failed or was cancelled before anything was deployed: nobody will apply it, and left
// pending it would stay in every list and count against the tenant's limit.
func dropFailedPreview(ctx context.Context, q *dbgen.Queries, op dbgen.Operation, status Status) error {
	if Kind(op.Kind) != KindPreview || status == Succeeded {
		return nil
	}
	d, err := q.GetDeployment(ctx, op.DeploymentID)
	if err != nil || DeploymentStatus(d.Status) != Pending || d.StackInstanceID.Valid || d.TemplateComponentID.Valid {
		return err
	}
	return discard(ctx, q, d.ID, "its preview "+string(status))
}

// discard lets a deployment never deployed go (Discard) and audits it as the system's doing,
// saying why.
func discard(ctx context.Context, q *dbgen.Queries, id uuid.UUID, because string) error {
	gone, err := Discard(ctx, q, id)
	if err != nil || !gone {
		return err
	}
	d, err := q.GetDeployment(ctx, id)
	if err != nil {
		return err
	}
	return audit.Record(ctx, q, audit.System, audit.Event{Tenant: d.TenantID, Action: "deployment.discard", TargetType: "deployment",
		TargetID: d.ID.String(), Diff: map[string]any{"name": d.Name, "because": because}})
}

// takeOver frees a name held by the actor's own preview of a deployment never deployed, once
// that preview has ended, so that previewing again under the same name (a parameter changed)
// needs no clean-up first. Anyone else's keeps its name until the reaper finds it abandoned.
func takeOver(ctx context.Context, q *dbgen.Queries, actor access.Principal, environmentID uuid.UUID, name string) error {
	held, err := q.LiveDeploymentNamed(ctx, dbgen.LiveDeploymentNamedParams{EnvironmentID: environmentID, Name: name})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	mine := actor.UserID != uuid.Nil && held.CreatedBy.Valid && held.CreatedBy.UUID == actor.UserID
	if err != nil || !mine || DeploymentStatus(held.Status) != Pending || held.StackInstanceID.Valid || held.TemplateComponentID.Valid {
		return err
	}
	_, err = Discard(ctx, q, held.ID)
	return err
}

// discardAbandoned discards the deployments whose previews nobody applied for AbandonedAfter,
// each in its own transaction, audited as the system.
func discardAbandoned(ctx context.Context, pool *pgxpool.Pool) error {
	ids, err := db.Queries(pool).AbandonedPreviews(ctx, AbandonedAfter.Seconds())
	if err != nil {
		return err
	}
	for _, id := range ids {
		err := db.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			return discard(ctx, db.Queries(tx), id, "its preview was not applied within "+AbandonedAfter.String())
		})
		if err != nil {
			return err
		}
	}
	return nil
}
