package deploy

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"nimbus/db/dbgen"
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

// Work queues every stale operation once more.
func (r *Reaper) Work(ctx context.Context, _ *river.Job[ReaperArgs]) error {
	ids, err := dbgen.New(r.pool).StaleOperations(ctx)
	if err != nil || len(ids) == 0 {
		return err
	}
	client := river.ClientFromContext[pgx.Tx](ctx)
	params := make([]river.InsertManyParams, len(ids))
	for i, id := range ids {
		params[i] = river.InsertManyParams{Args: OperationArgs{OperationID: id}}
	}
	_, err = client.InsertMany(ctx, params)
	return err
}

// ReaperSchedule is how often the reaper sweeps: a dead worker's operation resumes within
// about a minute and a half.
func ReaperSchedule() *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(30*time.Second),
		func() (river.JobArgs, *river.InsertOpts) { return ReaperArgs{}, nil },
		&river.PeriodicJobOpts{ID: "operation_reaper"})
}
