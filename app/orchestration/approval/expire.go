package approval

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"nimbus/db"
	"nimbus/jobs"
)

// ExpiryArgs asks for the requests past their time to be expired.
type ExpiryArgs struct{}

// Kind names the job in River.
func (ExpiryArgs) Kind() string { return "approval_expiry" }

// InsertOpts puts the job in the housekeeping queue.
func (ExpiryArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: jobs.HousekeepingQueue}
}

// Expirer ends the requests that waited too long, and their operations, so that a forgotten
// request does not hold its deployment forever.
type Expirer struct {
	river.WorkerDefaults[ExpiryArgs]
	pool *pgxpool.Pool
	log  *slog.Logger
}

// NewExpirer returns the sweep.
func NewExpirer(pool *pgxpool.Pool, log *slog.Logger) *Expirer { return &Expirer{pool: pool, log: log} }

// Timeout bounds one sweep.
func (e *Expirer) Timeout(*river.Job[ExpiryArgs]) time.Duration { return time.Minute }

// Work expires every request past its time, each in its own transaction.
func (e *Expirer) Work(ctx context.Context, _ *river.Job[ExpiryArgs]) error {
	// Ending an operation may queue the next step of an environment's provisioning, with the
	// client running this job.
	queue, err := jobs.FromContext(ctx)
	if err != nil {
		return err
	}
	n, err := NewService(e.pool, queue).ExpireDue(ctx)
	if n > 0 {
		e.log.Info("approval requests expired", "count", n)
	}
	return err
}

// ExpireDue expires the pending requests past their time, a hundred at most, and reports how
// many it expired.
func (s *Service) ExpireDue(ctx context.Context) (int, error) {
	ids, err := db.Queries(s.pool).DueApprovalRequests(ctx)
	if err != nil {
		return 0, fmt.Errorf("due approval requests: %w", err)
	}
	done := 0
	for _, id := range ids {
		expired := false
		err := db.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			r, err := db.Queries(tx).LockApprovalRequest(ctx, id)
			if errors.Is(err, pgx.ErrNoRows) || err == nil && (Status(r.Status) != Pending || !r.Lapsed) {
				return nil // decided, or gone with its operation, meanwhile
			}
			if err != nil {
				return err
			}
			expired = true
			return s.expire(ctx, tx, r)
		})
		if err != nil {
			return done, fmt.Errorf("expire approval request %s: %w", id, err)
		}
		if expired {
			done++
		}
	}
	return done, nil
}

// ExpirySchedule is how often the sweep runs: a request ends within a minute of its time.
func ExpirySchedule() *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(time.Minute),
		func() (river.JobArgs, *river.InsertOpts) { return ExpiryArgs{}, nil },
		&river.PeriodicJobOpts{ID: "approval_expiry"})
}
