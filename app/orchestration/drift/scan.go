package drift

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"nimbus/app/orchestration/deploy"
	"nimbus/db"
	"nimbus/jobs"
)

// ScanArgs asks for the drift checks that are due to be queued.
type ScanArgs struct{}

// Kind names the job in River.
func (ScanArgs) Kind() string { return "drift_scan" }

// InsertOpts puts the scan in the housekeeping queue; the checks it queues are operations.
func (ScanArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: jobs.HousekeepingQueue}
}

// Scanner queues the drift checks that are due (see DriftDue): deployments in
// environments whose own drift interval, or else their landing zone's, is set.
type Scanner struct {
	river.WorkerDefaults[ScanArgs]
	pool *pgxpool.Pool
}

// NewScanner returns the scanner.
func NewScanner(pool *pgxpool.Pool) *Scanner { return &Scanner{pool: pool} }

// Timeout bounds one scan.
func (w *Scanner) Timeout(*river.Job[ScanArgs]) time.Duration { return time.Minute }

// batch is the most checks one scan queues: the rest wait for the next scan, so that a
// zone whose interval was just set does not start every check at once.
const batch = 50

// Work queues the checks that are due, each in a transaction of its own (see
// deploy.QueueDriftCheck).
func (w *Scanner) Work(ctx context.Context, _ *river.Job[ScanArgs]) error {
	queue, err := jobs.FromContext(ctx)
	if err != nil {
		return err
	}
	due, err := db.Queries(w.pool).DriftDue(ctx, batch)
	if err != nil {
		return fmt.Errorf("drift checks due: %w", err)
	}
	for _, id := range due {
		if err := db.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error { return deploy.QueueDriftCheck(ctx, tx, queue, id) }); err != nil {
			return fmt.Errorf("queue the drift check of %s: %w", id, err)
		}
	}
	return nil
}

// Schedule looks for drift checks that are due every quarter of a minute: checks run at
// most that much later than their interval says.
func Schedule() *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(15*time.Second),
		func() (river.JobArgs, *river.InsertOpts) { return ScanArgs{}, nil },
		&river.PeriodicJobOpts{ID: "drift_scan"})
}
