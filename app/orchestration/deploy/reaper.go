package deploy

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"nimbus/app/kernel/graph"
	"nimbus/db"
	"nimbus/jobs"
)

// ReaperArgs asks for operations whose worker stopped beating to be picked up again.
type ReaperArgs struct{}

// Kind names the job in River.
func (ReaperArgs) Kind() string { return "operation_reaper" }

// InsertOpts puts the reaper in the housekeeping queue: it must sweep while every operation
// worker is busy, for that is when a dead node's operations wait longest.
func (ReaperArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: jobs.HousekeepingQueue}
}

// Reaper finds running operations with a stale heartbeat — their worker's process died — and
// queues them again; claiming them takes the lease over. River's own rescue of stuck jobs
// waits far longer than an author should.
type Reaper struct {
	river.WorkerDefaults[ReaperArgs]
	pool *pgxpool.Pool
}

// NewReaper returns the reaper.
func NewReaper(pool *pgxpool.Pool) *Reaper { return &Reaper{pool: pool} }

// Timeout bounds one sweep.
func (r *Reaper) Timeout(*river.Job[ReaperArgs]) time.Duration { return time.Minute }

// orphans are queued operations that no job will ever run: their job gave up on an error that
// kept passing (an unreachable database, say) after handing the operation back. Left alone,
// they would hold up every later operation on their deployment.
const orphans = `
SELECT o.id FROM operations o
WHERE o.status = 'queued' AND o.created_at < now() - interval '1 minute'
  AND NOT EXISTS (
    SELECT 1 FROM river_job j
    WHERE j.kind = 'operation' AND j.args->>'operation_id' = o.id::text
      AND j.state IN ('available', 'pending', 'retryable', 'running', 'scheduled'))`

// stalled are graphs under way (a stack instance's run, an environment being provisioned or
// decommissioned) that nothing moves: none of their operations is active, and no graph job is
// waiting for them nor ran lately (a step takes a minute at most). Their last step's job died
// with its server, and River would rescue it only hours later; a step asked for twice changes
// nothing the second time.
const stalled = `
WITH idle AS (
    SELECT 'stack_instance' AS parent, i.id FROM stack_instances i
    JOIN stack_runs r ON r.instance_id = i.id AND r.status = 'running' AND r.started_at < now() - interval '1 minute'
    WHERE NOT EXISTS (
        SELECT 1 FROM stack_run_steps s JOIN operations o ON o.id = s.operation_id
        WHERE s.run_id = r.id AND o.status IN ('queued', 'running', 'awaiting_approval'))
    UNION ALL
    SELECT 'environment', e.id FROM environments e
    WHERE e.status IN ('provisioning', 'decommissioning') AND e.updated_at < now() - interval '1 minute'
      AND NOT EXISTS (
        SELECT 1 FROM deployed_components d JOIN operations o ON o.deployment_id = d.id
        WHERE d.environment_id = e.id AND o.status IN ('queued', 'running', 'awaiting_approval')))
SELECT idle.parent, idle.id FROM idle
WHERE NOT EXISTS (
    SELECT 1 FROM river_job j
    WHERE j.kind = 'graph' AND j.args->>'id' = idle.id::text
      AND (j.state IN ('available', 'pending', 'retryable', 'scheduled')
        OR j.state = 'running' AND j.attempted_at > now() - interval '2 minutes'))`

// Work discards previews nobody applied, queues every stale operation, and every orphaned one,
// once more, and asks stalled graphs for their next step.
func (r *Reaper) Work(ctx context.Context, _ *river.Job[ReaperArgs]) error {
	if err := discardAbandoned(ctx, r.pool); err != nil {
		return err
	}
	steps, err := r.stalledGraphs(ctx)
	if err != nil {
		return err
	}
	ids, err := db.Queries(r.pool).StaleOperations(ctx)
	if err != nil {
		return err
	}
	rows, err := r.pool.Query(ctx, orphans)
	if err != nil {
		return err
	}
	orphaned, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return err
	}
	ids = append(ids, orphaned...)
	if len(ids) == 0 && len(steps) == 0 {
		return nil
	}
	queue, err := jobs.FromContext(ctx)
	if err != nil {
		return err
	}
	var params []river.InsertManyParams
	for _, id := range ids {
		params = append(params, river.InsertManyParams{Args: OperationArgs{OperationID: id}})
	}
	for _, s := range steps {
		params = append(params, river.InsertManyParams{Args: s})
	}
	return db.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		_, err := queue.InsertManyTx(ctx, tx, params)
		return err
	})
}

// stalledGraphs are the steps to ask for of graphs that nothing moves.
func (r *Reaper) stalledGraphs(ctx context.Context) ([]graph.Args, error) {
	rows, err := r.pool.Query(ctx, stalled)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[graph.Args])
}

// ReaperSchedule is how often the reaper sweeps: a dead worker's operation resumes within
// about a minute and a half.
func ReaperSchedule() *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(30*time.Second),
		func() (river.JobArgs, *river.InsertOpts) { return ReaperArgs{}, nil },
		&river.PeriodicJobOpts{ID: "operation_reaper"})
}
