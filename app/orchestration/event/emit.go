package event

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"nimbus/db"
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

// SweepSchedule runs the sweep every SweepEvery, one at a time, while waiting says an event
// waits: a sweep that would find nothing is not queued, so the jobs' list is not filled with
// one every two seconds.
func SweepSchedule(waiting *Waiting) *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(SweepEvery), func() (river.JobArgs, *river.InsertOpts) {
		if !waiting.Any() {
			return nil, nil
		}
		// One waiting or running at a time; a finished one does not keep the next away.
		return SweepArgs{}, &river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
			rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning, rivertype.JobStateRetryable, rivertype.JobStateScheduled}}}
	}, &river.PeriodicJobOpts{RunOnStart: true})
}

// Waiting knows whether any event waits to be routed, looking every half SweepEvery. The
// sweep's schedule asks it, and may not block on the database itself.
type Waiting struct {
	pool *pgxpool.Pool
	any  atomic.Bool
}

// NewWaiting returns a Waiting that says an event waits until it has looked.
func NewWaiting(pool *pgxpool.Pool) *Waiting {
	w := &Waiting{pool: pool}
	w.any.Store(true)
	return w
}

// Any reports whether an event waited when it last looked; a look that failed counts as yes.
func (w *Waiting) Any() bool { return w.any.Load() }

// Watch looks until ctx ends.
func (w *Waiting) Watch(ctx context.Context) {
	tick := time.NewTicker(SweepEvery / 2)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		any, err := db.Queries(w.pool).AnyPendingEvent(ctx)
		w.any.Store(any || err != nil)
	}
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
	ids, err := db.Queries(w.router.pool).PendingEvents(ctx)
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
