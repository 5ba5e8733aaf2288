package event

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"nimbus/db/dbgen"
	"nimbus/jobs"
)

// Own is one of Nimbus's own events: what it tells of (Type, such as deployment.succeeded or
// stack.state_changed) and what it is about.
type Own struct {
	Type    string
	Subject string
	// Tenant, Environment, Instance and Deployment name what the event is about; zero where
	// it is about none.
	Tenant, Environment, Instance, Deployment uuid.UUID
	Data                                      map[string]any
}

// Emit writes one of Nimbus's own events to the log with q, in the transaction of the change
// it tells of (the log is the outbox): the event exists exactly when the change does. The
// sweep routes it and hands it to the subscriptions moments later.
func Emit(ctx context.Context, q *dbgen.Queries, e Own) error {
	target := Target{}
	if e.Instance != uuid.Nil {
		target.Instance = e.Instance.String()
	} else if e.Deployment != uuid.Nil {
		target.Deployment = e.Deployment.String()
	}
	payload, err := json.Marshal(stored{Source: "nimbus", Data: Redacted(e.Data), Target: target})
	if err != nil {
		return err
	}
	_, err = q.LogOwnEvent(ctx, dbgen.LogOwnEventParams{Type: e.Type, Subject: e.Subject, Payload: payload,
		Tenant: null(e.Tenant), Environment: null(e.Environment), Instance: null(e.Instance), Deployment: null(e.Deployment)})
	if err != nil {
		return fmt.Errorf("log event %s: %w", e.Type, err)
	}
	return nil
}

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
