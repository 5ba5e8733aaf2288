package instance

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/app/domain/stack"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/problem"
	"nimbus/app/kernel/secrets"
	"nimbus/app/orchestration/deploy"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/jobs"
)

// Signaller fires triggers on instances for senders that are not people, such as events.
type Signaller struct {
	pool *pgxpool.Pool
	keys *secrets.Keyring
}

// NewSignaller returns a signaller; keys opens the secret parameters a transition's actions
// may read.
func NewSignaller(pool *pgxpool.Pool, keys *secrets.Keyring) *Signaller {
	return &Signaller{pool: pool, keys: keys}
}

// Refused reports whether err is a refusal in words (a state that does not take a trigger, an
// instance that is not whole) rather than a failure.
func Refused(err error) bool {
	var r *refused
	return errors.As(err, &r) || problem.Refusal(err)
}

// Signal queues trigger on an instance as a transition run from source, in the caller's
// transaction, with detail kept as the run's inputs (what sent it). As with a person's
// trigger, one queued behind a run under way is checked when its turn comes; with no run
// under way, a trigger the instance's state does not take, or an instance that is not whole,
// is refused at once (Refused tells it from a failure).
func (s *Signaller) Signal(ctx context.Context, tx pgx.Tx, queue jobs.Queue, id uuid.UUID, trigger, source string, detail any) (uuid.UUID, error) {
	q := db.Queries(tx)
	inst, err := q.LockStackInstance(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, problem.Invalid("instance", "exists", "the stack instance is gone")
	}
	if err != nil {
		return uuid.Nil, err
	}
	if lifecycle.InstanceStatus(inst.Status) == lifecycle.InstanceDestroyed {
		return uuid.Nil, refuse("%s is destroyed", inst.Name)
	}
	if idle, err := idle(ctx, q, inst.ID); err != nil {
		return uuid.Nil, err
	} else if idle {
		def, err := stack.LoadVersion(ctx, q, inst.StackID, int(inst.Version))
		if err != nil {
			return uuid.Nil, err
		}
		if _, err := fires(inst, def, trigger); err != nil {
			return uuid.Nil, err
		}
	}
	inputs, err := json.Marshal(detail)
	if err != nil {
		return uuid.Nil, err
	}
	d := &runner{deploys: deploy.NewService(s.pool, s.keys, queue, nil, nil), keys: s.keys, jobs: queue}
	run, err := d.queue(ctx, tx, inst, dbgen.CreateStackRunParams{Kind: string(RunTransition), Trigger: trigger, Source: source, Inputs: inputs})
	if err != nil {
		return uuid.Nil, err
	}
	return run.ID, nil
}
