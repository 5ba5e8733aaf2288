package instance

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/secrets"
	"nimbus/app/orchestration/deploy"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/jobs"
)

// stayed is the state a timeout's transition was fired for, and since when the instance stood
// there.
type stayed struct {
	State     string    `json:"state"`
	EnteredAt time.Time `json:"entered_at"`
}

// stillThere refuses a timeout's transition whose instance left the state it was fired for
// while the run waited for its turn.
func stillThere(r *runCtx) error {
	if r.run.Source != "timeout" {
		return nil
	}
	var s stayed
	if err := json.Unmarshal(r.run.Inputs, &s); err != nil {
		return err
	}
	if deref(r.inst.CurrentState) != s.State || r.inst.StateEnteredAt == nil || !r.inst.StateEnteredAt.Equal(s.EnteredAt) {
		return refuse("%s left %s before its timeout's turn came", r.inst.Name, s.State)
	}
	return nil
}

// TimeoutArgs fires Trigger, a transition's on_timeout, on an instance that has stayed in State
// since EnteredAt. Queued with the move into State, to run when the timeout has passed.
type TimeoutArgs struct {
	InstanceID uuid.UUID `json:"instance_id"`
	State      string    `json:"state"`
	EnteredAt  time.Time `json:"entered_at"`
	Trigger    string    `json:"trigger"`
}

// Kind names the job in River.
func (TimeoutArgs) Kind() string { return "stack_state_timeout" }

// TimeoutWorker fires the on_timeout of a state an instance stayed in too long.
type TimeoutWorker struct {
	river.WorkerDefaults[TimeoutArgs]
	pool *pgxpool.Pool
	keys *secrets.Keyring
}

// NewTimeoutWorker returns the worker; keys opens the secret parameters the transition's
// actions may read.
func NewTimeoutWorker(pool *pgxpool.Pool, keys *secrets.Keyring) *TimeoutWorker {
	return &TimeoutWorker{pool: pool, keys: keys}
}

// Timeout bounds one firing, which only reads and queues.
func (w *TimeoutWorker) Timeout(*river.Job[TimeoutArgs]) time.Duration { return time.Minute }

// Work queues the trigger as a transition run with source "timeout", when the instance is
// still in the state it entered then: one that has left it, even to come back, or that is
// gone, is let be. The run is checked against the instance when its turn comes.
func (w *TimeoutWorker) Work(ctx context.Context, job *river.Job[TimeoutArgs]) error {
	queue, err := jobs.FromContext(ctx)
	if err != nil {
		return err
	}
	d := &runner{deploys: deploy.NewService(w.pool, w.keys, queue, nil, nil), keys: w.keys, jobs: queue}
	a := job.Args
	return db.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		inst, err := db.Queries(tx).LockStackInstance(ctx, a.InstanceID)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if lifecycle.InstanceStatus(inst.Status) == lifecycle.InstanceDestroyed || deref(inst.CurrentState) != a.State || inst.StateEnteredAt == nil || !inst.StateEnteredAt.Equal(a.EnteredAt) {
			return nil
		}
		// Kept with the run, which checks again when its turn comes.
		since, _ := json.Marshal(stayed{State: a.State, EnteredAt: a.EnteredAt})
		_, err = d.queue(ctx, tx, inst, dbgen.CreateStackRunParams{Kind: string(RunTransition), Trigger: a.Trigger, Source: "timeout", Inputs: since})
		return err
	})
}
