package component

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"nimbus/db"
	"nimbus/jobs"
)

// PollArgs asks for a sync of every link.
type PollArgs struct{}

// Kind names the job in River.
func (PollArgs) Kind() string { return "repository_poll" }

// DefaultPollInterval is how often every linked repository is looked at when no webhook
// says it changed.
const DefaultPollInterval = 5 * time.Minute

// PollSchedule polls the linked repositories every interval (DefaultPollInterval when zero).
func PollSchedule(interval time.Duration) *river.PeriodicJob {
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	return river.NewPeriodicJob(river.PeriodicInterval(interval),
		func() (river.JobArgs, *river.InsertOpts) { return PollArgs{}, nil },
		&river.PeriodicJobOpts{ID: "repository_poll"})
}

// Poller queues a sync of every link.
type Poller struct {
	river.WorkerDefaults[PollArgs]
	pool *pgxpool.Pool
}

// NewPoller returns the poll's worker.
func NewPoller(pool *pgxpool.Pool) *Poller { return &Poller{pool: pool} }

// Work queues the syncs, one per link, in one statement.
func (p *Poller) Work(ctx context.Context, _ *river.Job[PollArgs]) error {
	ids, err := db.Queries(p.pool).ListRepositoryLinkIDs(ctx)
	if err != nil || len(ids) == 0 {
		return err
	}
	queue, err := jobs.FromContext(ctx)
	if err != nil {
		return err
	}
	params := make([]river.InsertManyParams, len(ids))
	for i, id := range ids {
		params[i] = river.InsertManyParams{Args: SyncArgs{LinkID: id}}
	}
	return db.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		_, err := queue.InsertManyTx(ctx, tx, params)
		return err
	})
}
