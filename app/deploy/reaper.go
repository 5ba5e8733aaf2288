package deploy

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"nimbus/db/dbgen"
	"nimbus/jobs"
)

// ReaperArgs asks for operations whose worker stopped beating to be picked up again.
type ReaperArgs struct{}

// Kind names the job in River.
func (ReaperArgs) Kind() string { return "operation_reaper" }

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

// Work queues every stale operation, and every orphaned one, once more.
func (r *Reaper) Work(ctx context.Context, _ *river.Job[ReaperArgs]) error {
	ids, err := dbgen.New(r.pool).StaleOperations(ctx)
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
	if len(ids) == 0 {
		return nil
	}
	queue, err := jobs.FromContext(ctx)
	if err != nil {
		return err
	}
	params := make([]river.InsertManyParams, len(ids))
	for i, id := range ids {
		params[i] = river.InsertManyParams{Args: OperationArgs{OperationID: id}}
	}
	return pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		_, err := queue.InsertManyTx(ctx, tx, params)
		return err
	})
}

// ReaperSchedule is how often the reaper sweeps: a dead worker's operation resumes within
// about a minute and a half.
func ReaperSchedule() *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(30*time.Second),
		func() (river.JobArgs, *river.InsertOpts) { return ReaperArgs{}, nil },
		&river.PeriodicJobOpts{ID: "operation_reaper"})
}
