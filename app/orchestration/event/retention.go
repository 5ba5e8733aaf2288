package event

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"nimbus/db"
	"nimbus/jobs"
)

// DefaultRetention is how long the log keeps an event unless told otherwise.
const DefaultRetention = 30 * 24 * time.Hour

// RetentionArgs deletes the events older than the retention.
type RetentionArgs struct{}

// Kind names the job in River.
func (RetentionArgs) Kind() string { return "event_retention" }

// InsertOpts puts the job in the housekeeping queue.
func (RetentionArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: jobs.HousekeepingQueue}
}

// RetentionSchedule runs the retention hourly.
func RetentionSchedule() *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(time.Hour), func() (river.JobArgs, *river.InsertOpts) { return RetentionArgs{}, nil },
		&river.PeriodicJobOpts{ID: "event_retention", RunOnStart: true})
}

// Retainer deletes what the log no longer keeps, a batch at a time, so that a large backlog
// never holds a long transaction.
type Retainer struct {
	river.WorkerDefaults[RetentionArgs]
	pool *pgxpool.Pool
	keep time.Duration
}

// NewRetainer returns the worker; keep is how long events are kept (DefaultRetention when
// zero).
func NewRetainer(pool *pgxpool.Pool, keep time.Duration) *Retainer {
	if keep <= 0 {
		keep = DefaultRetention
	}
	return &Retainer{pool: pool, keep: keep}
}

// Work deletes until nothing is older than the retention.
func (w *Retainer) Work(ctx context.Context, _ *river.Job[RetentionArgs]) error {
	before := time.Now().Add(-w.keep)
	for {
		n, err := db.Queries(w.pool).DeleteOldEvents(ctx, before)
		if err != nil || n == 0 {
			return err
		}
	}
}
