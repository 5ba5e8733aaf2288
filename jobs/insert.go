package jobs

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// Inserter queues jobs in the caller's transaction and wakes the workers of every node the
// moment that transaction commits.
//
// River announces inserts itself, but each client at most once per FetchCooldown: a job
// queued by this node just after another goes unannounced, and when the fetch the first one
// woke has already run, it waits for the next poll, a second away. Inserter announces every
// transaction that queues a job for now. The workers still fetch at most once per
// FetchCooldown, so a burst of jobs costs a few fetches, not one per job.
type Inserter struct {
	client *river.Client[pgx.Tx]
}

// NewInserter returns the Inserter of a client.
func NewInserter(client *river.Client[pgx.Tx]) Inserter { return Inserter{client: client} }

// FromContext returns the Inserter of the client running the job whose context ctx is.
func FromContext(ctx context.Context) (Inserter, error) {
	client, err := river.ClientFromContextSafely[pgx.Tx](ctx)
	if err != nil {
		return Inserter{}, fmt.Errorf("queue a job from a job: %w", err)
	}
	return NewInserter(client), nil
}

// InsertTx queues a job in tx.
func (i Inserter) InsertTx(ctx context.Context, tx pgx.Tx, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error) {
	res, err := i.client.InsertTx(ctx, tx, args, opts)
	if err != nil {
		return nil, err
	}
	return res, announce(ctx, tx, []*rivertype.JobInsertResult{res})
}

// InsertManyTx queues jobs in tx.
func (i Inserter) InsertManyTx(ctx context.Context, tx pgx.Tx, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error) {
	res, err := i.client.InsertManyTx(ctx, tx, params)
	if err != nil {
		return nil, err
	}
	return res, announce(ctx, tx, res)
}

// announce notifies the workers of the queues that got a job to run now, on River's own
// channel and in its words, so that Postgres folds River's notice and this one into a single
// notification when both are sent in one transaction. A job scheduled for later is River's to
// announce when it falls due.
func announce(ctx context.Context, tx pgx.Tx, inserted []*rivertype.JobInsertResult) error {
	queues := map[string]bool{}
	for _, r := range inserted {
		if !r.UniqueSkippedAsDuplicate && r.Job.State == rivertype.JobStateAvailable {
			queues[r.Job.Queue] = true
		}
	}
	for q := range queues {
		_, err := tx.Exec(ctx, "SELECT pg_notify(current_schema() || '.river_insert', $1)", fmt.Sprintf(`{"queue": %q}`, q))
		if err != nil {
			return fmt.Errorf("announce a job in queue %s: %w", q, err)
		}
	}
	return nil
}

// Queue is the port every domain queues its work through: a job inserted in the caller's
// transaction exists exactly when the change that asked for it does.
type Queue interface {
	InsertTx(ctx context.Context, tx pgx.Tx, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
}

// Running queues with the client running the job in whose context it is asked to: the queue
// of services that only workers use, built once with the workers, before River builds the
// client from them.
type Running struct{}

// InsertTx queues a job in tx with the client of the job ctx belongs to.
func (Running) InsertTx(ctx context.Context, tx pgx.Tx, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error) {
	i, err := FromContext(ctx)
	if err != nil {
		return nil, err
	}
	return i.InsertTx(ctx, tx, args, opts)
}
