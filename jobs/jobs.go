// Package jobs runs Nimbus's background work as River jobs on the same Postgres: the client,
// its workers, and the periodic housekeeping. Later features add their workers here.
package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"nimbus/db"
)

// The queues. Operations, and what is an operation's work (an approved operation going on, a
// graph's next step, a stack state's timeout that moves its instance), run in River's default
// queue, where jobs queued before the other queues existed still run. Every other kind of job has a queue with workers of its own, so that a
// queue full of long operations never delays it, nor it an operation.
const (
	// CheckQueue is the queue of component checks.
	CheckQueue = "checks"
	// EventQueue is the queue of event routing: an event to the stack instance it names, and
	// the sweep that routes Nimbus's own events.
	EventQueue = "events"
	// DeliveryQueue is the queue of deliveries of events to subscriptions: each waits on a
	// receiver somewhere on the network.
	DeliveryQueue = "deliveries"
	// HousekeepingQueue is the queue of periodic sweeps: the operation reaper, expiries, drift
	// scans, retention, cloud polls and the deletion of expired sessions.
	HousekeepingQueue = "housekeeping"
)

// fetchCooldown is the least time between two fetches of one queue's jobs on a node, and so
// the longest a job announced by Inserter waits for a fetch: River's default, 100 ms, would be
// most of the time a request takes to reach its engine. Fetches still come in batches under
// load: every job announced during a cooldown is fetched together at its end.
const fetchCooldown = 5 * time.Millisecond

// Config tunes the job client.
type Config struct {
	// Workers is how many jobs of the default queue (operations, and graphs' steps) run at
	// once on this node.
	Workers int
	// CheckWorkers is how many component checks run at once on this node, in CheckQueue.
	CheckWorkers int
	// EventWorkers is how many events are routed at once on this node, in EventQueue.
	EventWorkers int
	// DeliveryWorkers is how many deliveries to subscriptions run at once on this node, in
	// DeliveryQueue.
	DeliveryWorkers int
	// HousekeepingWorkers is how many periodic sweeps run at once on this node, in
	// HousekeepingQueue.
	HousekeepingWorkers int
	// Timeout bounds any one job; never unlimited.
	Timeout time.Duration
	// Register adds the domains' workers.
	Register func(*river.Workers)
	// Periodic are the domains' scheduled jobs.
	Periodic []*river.PeriodicJob
	// Tracer makes each job's spans, in the trace of the span that queued it; none when nil.
	Tracer trace.TracerProvider
}

// NewClient returns a River client with Nimbus's workers and periodic jobs registered, working
// through pool: the server gives it one whose commits do not wait for the disk
// (db.LazySessions), so that a job's fetch does not. It does not start working until Start.
func NewClient(pool *pgxpool.Pool, log *slog.Logger, cfg Config) (*river.Client[pgx.Tx], error) {
	if cfg.Workers <= 0 {
		cfg.Workers = 10
	}
	if cfg.CheckWorkers <= 0 {
		cfg.CheckWorkers = 4
	}
	if cfg.EventWorkers <= 0 {
		cfg.EventWorkers = 4
	}
	if cfg.DeliveryWorkers <= 0 {
		cfg.DeliveryWorkers = 4
	}
	if cfg.HousekeepingWorkers <= 0 {
		cfg.HousekeepingWorkers = 2
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = time.Hour
	}
	if cfg.Tracer == nil {
		cfg.Tracer = noop.NewTracerProvider()
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, &housekeepingWorker{pool: pool, log: log})
	if cfg.Register != nil {
		cfg.Register(workers)
	}
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Logger:        slog.New(routine{log.Handler()}).With("component", "jobs"),
		JobTimeout:    cfg.Timeout,
		FetchCooldown: fetchCooldown,
		Queues: map[string]river.QueueConfig{
			river.QueueDefault: {MaxWorkers: cfg.Workers},
			CheckQueue:         {MaxWorkers: cfg.CheckWorkers},
			EventQueue:         {MaxWorkers: cfg.EventWorkers},
			DeliveryQueue:      {MaxWorkers: cfg.DeliveryWorkers},
			HousekeepingQueue:  {MaxWorkers: cfg.HousekeepingWorkers},
		},
		Workers:    workers,
		Middleware: []rivertype.Middleware{&traced{tracer: cfg.Tracer.Tracer("nimbus/jobs")}},
		PeriodicJobs: append([]*river.PeriodicJob{
			river.NewPeriodicJob(river.PeriodicInterval(15*time.Minute),
				func() (river.JobArgs, *river.InsertOpts) { return HousekeepingArgs{}, nil },
				&river.PeriodicJobOpts{ID: "housekeeping", RunOnStart: true}),
		}, cfg.Periodic...),
	})
	if err != nil {
		return nil, fmt.Errorf("job client: %w", err)
	}
	return client, nil
}

// HousekeepingArgs asks for expired sessions and old sign-in failures to be deleted.
type HousekeepingArgs struct{}

// Kind names the job in River.
func (HousekeepingArgs) Kind() string { return "housekeeping" }

// InsertOpts puts the job in HousekeepingQueue.
func (HousekeepingArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: HousekeepingQueue}
}

type housekeepingWorker struct {
	river.WorkerDefaults[HousekeepingArgs]
	pool *pgxpool.Pool
	log  *slog.Logger
}

func (w *housekeepingWorker) Timeout(*river.Job[HousekeepingArgs]) time.Duration { return time.Minute }

func (w *housekeepingWorker) Work(ctx context.Context, _ *river.Job[HousekeepingArgs]) error {
	q := db.Queries(w.pool)
	sessions, err := q.DeleteExpiredSessions(ctx)
	if err != nil {
		return fmt.Errorf("delete expired sessions: %w", err)
	}
	failures, err := q.DeleteOldLoginFailures(ctx, time.Now().Add(-24*time.Hour))
	if err != nil {
		return fmt.Errorf("delete old login failures: %w", err)
	}
	w.log.Info("housekeeping done", "expired_sessions", sessions, "old_login_failures", failures)
	return nil
}

// routine lowers River's INFO records to DEBUG: River tells its routine at INFO (each
// producer's job counts every few seconds, leader elections), which would fill an operator's
// log while nothing happens. Its warnings and errors pass as they are.
type routine struct{ slog.Handler }

func (h routine) Enabled(ctx context.Context, l slog.Level) bool {
	return h.Handler.Enabled(ctx, quieter(l))
}

func (h routine) Handle(ctx context.Context, r slog.Record) error {
	r.Level = quieter(r.Level)
	return h.Handler.Handle(ctx, r)
}

func (h routine) WithAttrs(attrs []slog.Attr) slog.Handler {
	return routine{h.Handler.WithAttrs(attrs)}
}
func (h routine) WithGroup(name string) slog.Handler { return routine{h.Handler.WithGroup(name)} }

func quieter(l slog.Level) slog.Level {
	if l == slog.LevelInfo {
		return slog.LevelDebug
	}
	return l
}
