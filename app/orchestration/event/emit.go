package event

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"nimbus/db/dbgen"
	"nimbus/jobs"
)

// SweepArgs routes the events waiting: Nimbus's own, and any whose routing job was lost.
type SweepArgs struct{}

// Kind names the job in River.
func (SweepArgs) Kind() string { return "event_sweep" }

// InsertOpts puts the sweep with the routing it does.
func (SweepArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: jobs.EventQueue} }

// SweepEvery is how often the sweep runs: how long one of Nimbus's own events waits, at most,
// before it is routed and delivered.
const SweepEvery = 2 * time.Second

// SweepSchedule runs the sweep every SweepEvery, one at a time.
func SweepSchedule() *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(SweepEvery), func() (river.JobArgs, *river.InsertOpts) {
		// One waiting or running at a time; a finished one does not keep the next away.
		return SweepArgs{}, &river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
			rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning, rivertype.JobStateRetryable, rivertype.JobStateScheduled}}}
	}, &river.PeriodicJobOpts{RunOnStart: true})
}

// Sweeper routes the waiting events, each in a transaction of its own.
type Sweeper struct {
	river.WorkerDefaults[SweepArgs]
	router *Router
}

// NewSweeper returns the sweeper, which routes with router.
func NewSweeper(router *Router) *Sweeper { return &Sweeper{router: router} }

// Timeout bounds one sweep.
func (w *Sweeper) Timeout(*river.Job[SweepArgs]) time.Duration { return time.Minute }

// Work routes what waits; an event another worker is routing is left to it, and one that
// cannot be routed now does not hold up the others: the next sweep tries it again.
func (w *Sweeper) Work(ctx context.Context, _ *river.Job[SweepArgs]) error {
	ids, err := dbgen.New(w.router.pool).PendingEvents(ctx)
	if err != nil {
		return err
	}
	var failed []error
	for _, id := range ids {
		if err := w.router.routeOne(ctx, id); err != nil {
			failed = append(failed, fmt.Errorf("route event %s: %w", id, err))
		}
	}
	return errors.Join(failed...)
}
