package elevation

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"nimbus/jobs"
)

// EndArgs asks for one elevation to end at its end time; it is scheduled when it is granted.
type EndArgs struct {
	ElevationID uuid.UUID `json:"elevation_id"`
}

// Kind names the job in River.
func (EndArgs) Kind() string { return "elevation_end" }

// InsertOpts puts the job in the housekeeping queue.
func (EndArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: jobs.HousekeepingQueue} }

// Ender ends an elevation whose time has come. One revoked meanwhile is left as it is.
type Ender struct {
	river.WorkerDefaults[EndArgs]
	svc *Service
}

// NewEnder returns the worker. Ending queues no job, so its service needs no queue.
func NewEnder(pool *pgxpool.Pool) *Ender { return &Ender{svc: NewService(pool, nil)} }

// Timeout bounds one ending.
func (w *Ender) Timeout(*river.Job[EndArgs]) time.Duration { return time.Minute }

// Work ends the elevation.
func (w *Ender) Work(ctx context.Context, job *river.Job[EndArgs]) error {
	_, err := w.svc.Expire(ctx, job.Args.ElevationID)
	return err
}

// SweepArgs asks for every elevation past its end time to be ended.
type SweepArgs struct{}

// Kind names the job in River.
func (SweepArgs) Kind() string { return "elevation_sweep" }

// InsertOpts puts the job in the housekeeping queue.
func (SweepArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: jobs.HousekeepingQueue}
}

// Sweeper ends the elevations past their time whose own job did not (it was lost, or the
// clock of the node that ran it was behind). Until then their role is not given anyway: roles
// are read with only the elevations whose end time is still ahead.
type Sweeper struct {
	river.WorkerDefaults[SweepArgs]
	svc *Service
	log *slog.Logger
}

// NewSweeper returns the sweep.
func NewSweeper(pool *pgxpool.Pool, log *slog.Logger) *Sweeper {
	return &Sweeper{svc: NewService(pool, nil), log: log}
}

// Timeout bounds one sweep.
func (w *Sweeper) Timeout(*river.Job[SweepArgs]) time.Duration { return time.Minute }

// Work ends the elevations due.
func (w *Sweeper) Work(ctx context.Context, _ *river.Job[SweepArgs]) error {
	n, err := w.svc.ExpireDue(ctx)
	if n > 0 {
		w.log.Info("elevations ended", "count", n)
	}
	return err
}

// SweepSchedule runs the sweep every minute.
func SweepSchedule() *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(time.Minute),
		func() (river.JobArgs, *river.InsertOpts) { return SweepArgs{}, nil },
		&river.PeriodicJobOpts{ID: "elevation_sweep"})
}
