package poller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"nimbus/app/domain/inventory"
	"nimbus/app/orchestration/event"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/jobs"
)

// DefaultInterval is how often the clouds are polled when the server is not told otherwise.
const DefaultInterval = time.Minute

// Args asks for every active cloud_provider source to be polled once.
type Args struct{}

// Kind names the job in River.
func (Args) Kind() string { return "cloud_poll" }

// InsertOpts puts the job in the housekeeping queue.
func (Args) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: jobs.HousekeepingQueue} }

// Schedule polls every interval (DefaultInterval when zero). One job polls every source, each
// in a transaction of its own: sources come and go at any time, and River's periodic jobs are
// fixed when the client starts, so a job per source would have to be kept in step with the
// table on every node.
func Schedule(interval time.Duration) *river.PeriodicJob {
	if interval <= 0 {
		interval = DefaultInterval
	}
	return river.NewPeriodicJob(river.PeriodicInterval(interval),
		func() (river.JobArgs, *river.InsertOpts) { return Args{}, nil },
		&river.PeriodicJobOpts{ID: "cloud_poll", RunOnStart: true})
}

// Worker polls the sources.
type Worker struct {
	river.WorkerDefaults[Args]
	pool   *pgxpool.Pool
	clouds Clouds
	log    *slog.Logger
	now    func() time.Time
}

// NewWorker returns the worker.
func NewWorker(pool *pgxpool.Pool, clouds Clouds, log *slog.Logger) *Worker {
	return &Worker{pool: pool, clouds: clouds, log: log, now: time.Now}
}

// Timeout bounds one round of polls; a cloud that does not answer within it is tried again
// on the next round.
func (w *Worker) Timeout(*river.Job[Args]) time.Duration { return 5 * time.Minute }

// Work polls each source once. A source that fails is logged and left for the next round;
// the others are polled all the same.
func (w *Worker) Work(ctx context.Context, _ *river.Job[Args]) error {
	queue, err := jobs.FromContext(ctx)
	if err != nil {
		return err
	}
	ids, err := db.Queries(w.pool).PolledSources(ctx)
	if err != nil {
		return fmt.Errorf("list the polled sources: %w", err)
	}
	for _, id := range ids {
		err := w.poll(ctx, queue, id)
		switch {
		case errors.Is(err, errMisconfigured):
			w.log.Warn("event source misconfigured: not polled", "source", id, "err", err)
		case err != nil:
			w.log.Warn("poll failed", "source", id, "err", err)
		}
	}
	if err := w.discoverClusters(ctx); err != nil {
		return err
	}
	return ctx.Err()
}

// poll compares one source's cloud with what it saw last and records the difference. The
// cloud is asked first, outside any transaction, so that no row is held while a cloud is slow
// to answer; then the source's row is locked (a poll already saving is left to finish) and
// what was seen last read again. When another poll has saved since this one began, this
// one's look may be older than what is saved: it saves nothing, and the next round looks again.
func (w *Worker) poll(ctx context.Context, queue event.Queue, id uuid.UUID) error {
	q := db.Queries(w.pool)
	src, err := q.GetEventSource(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && (src.Kind != event.CloudProvider || !src.Active) {
		return nil
	} else if err != nil {
		return err
	}
	cloud, provider, err := w.clouds.open(ctx, q, src)
	if err != nil {
		return err
	}
	before, err := seen(ctx, q, id)
	if err != nil {
		return err
	}
	machines, err := cloud.Machines(ctx)
	if err != nil {
		return err
	}
	return db.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		q := db.Queries(tx)
		src, err := q.LockPolledSource(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		} else if err != nil {
			return err
		}
		last, err := seen(ctx, q, id)
		if err != nil {
			return err
		}
		if !maps.EqualFunc(before, last, Seen.equal) {
			return nil
		}
		// Postgres keeps microseconds: the time stored is the time an event's ID is made from.
		at := w.now().UTC().Truncate(time.Microsecond)
		d := Compare(provider, last, machines, at)
		for resource, state := range d.Store {
			if err := q.SetPollerState(ctx, dbgen.SetPollerStateParams{SourceID: id, Resource: resource, State: state, SeenAt: at}); err != nil {
				return err
			}
		}
		for _, resource := range d.Forget {
			if err := q.ForgetPolledResource(ctx, dbgen.ForgetPolledResourceParams{SourceID: id, Resource: resource}); err != nil {
				return err
			}
		}
		if typ, ok := inventoried[provider]; ok {
			err := inventory.Discover(ctx, q, inventory.Sighting{Zone: src.LandingZoneID, Type: typ, IDs: slices.Sorted(maps.Keys(machines))})
			if err != nil {
				return err
			}
		}
		if len(d.Events) == 0 {
			return nil
		}
		_, err = event.Record(ctx, tx, queue, event.Source{ID: src.ID, LandingZoneID: src.LandingZoneID, Kind: src.Kind}, d.Events)
		return err
	})
}

// inventoried is the resource type of a provider's machines in the inventory, for discovery
// to hold the zone's items to what the cloud holds. Proxmox's machines are not discovered yet:
// the ids its poller reads (VM numbers) are not those its deployments record.
var inventoried = map[string]string{SimcloudProvider: "simcloud:index:Machine"}

// seen is what a source saw last of each machine.
func seen(ctx context.Context, q *dbgen.Queries, id uuid.UUID) (map[string]Seen, error) {
	rows, err := q.PollerState(ctx, id)
	if err != nil {
		return nil, err
	}
	last := make(map[string]Seen, len(rows))
	for _, r := range rows {
		last[r.Resource] = Seen{State: r.State, Since: r.SeenAt}
	}
	return last, nil
}
