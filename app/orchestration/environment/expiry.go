package environment

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/outbox"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/jobs"
)

// DefaultExpiryCheck is how often environments' expiries are looked at when nothing else is
// configured: warnings and decommissioning come within a minute of their time.
const DefaultExpiryCheck = time.Minute

// ExpiryArgs asks for the environments' expiries to be looked at.
type ExpiryArgs struct{}

// Kind names the job in River.
func (ExpiryArgs) Kind() string { return "environment_expiry" }

// InsertOpts puts the job in the housekeeping queue.
func (ExpiryArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: jobs.HousekeepingQueue}
}

// ExpirySchedule runs the look every interval (DefaultExpiryCheck when zero).
func ExpirySchedule(every time.Duration) *river.PeriodicJob {
	if every <= 0 {
		every = DefaultExpiryCheck
	}
	return river.NewPeriodicJob(river.PeriodicInterval(every),
		func() (river.JobArgs, *river.InsertOpts) { return ExpiryArgs{}, nil },
		&river.PeriodicJobOpts{ID: "environment_expiry"})
}

// DestroyInstance takes down a stack instance of an expired environment, as actor.
type DestroyInstance func(ctx context.Context, actor access.Principal, id uuid.UUID) error

// expiry acts for nobody in particular: audit records it as the system, and it may take down
// whatever an expiry must.
var expiry = access.Principal{Email: audit.System.Email, ProviderAdmin: true}

// Expirer sends each warning of an expiry once (environment.expiring) and takes expired
// environments down through the decommissioning a person would start: their stack instances
// first, through the instances' own destroy, then every deployment (environment.expired).
type Expirer struct {
	river.WorkerDefaults[ExpiryArgs]
	pool      *pgxpool.Pool
	instances DestroyInstance
	log       *slog.Logger
}

// NewExpirer returns the worker; instances destroys stack instances, queuing with the job's
// client (jobs.Running).
func NewExpirer(pool *pgxpool.Pool, instances DestroyInstance, log *slog.Logger) *Expirer {
	return &Expirer{pool: pool, instances: instances, log: log}
}

// Timeout bounds one look.
func (e *Expirer) Timeout(*river.Job[ExpiryArgs]) time.Duration { return time.Minute }

// Work looks at each environment past its first warning point, each in transactions of its
// own: one that fails is tried again at the next look, the others go on.
func (e *Expirer) Work(ctx context.Context, _ *river.Job[ExpiryArgs]) error {
	queue, err := jobs.FromContext(ctx)
	if err != nil {
		return err
	}
	rows, err := db.Queries(e.pool).ExpiringEnvironments(ctx)
	if err != nil {
		return fmt.Errorf("expiring environments: %w", err)
	}
	var failed error
	for _, env := range rows {
		now := time.Now()
		if now.Before(env.ExpiresAt) {
			err = e.warn(ctx, queue, env, now)
		} else {
			err = e.expire(ctx, queue, env)
		}
		if err != nil {
			e.log.Error("environment expiry", "environment", env.ID, "err", err)
			failed = errors.Join(failed, fmt.Errorf("environment %s: %w", env.ID, err))
		}
	}
	return failed
}

// warn sends each warning whose point has passed and that was not sent for this expiry.
func (e *Expirer) warn(ctx context.Context, queue jobs.Queue, env dbgen.ExpiringEnvironmentsRow, now time.Time) error {
	for _, w := range []warning{dayBefore, hourBefore} {
		if now.Before(warnAt(w, env.CreatedAt, env.ExpiresAt)) {
			continue
		}
		err := db.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
			n, err := db.Queries(tx).RecordExpiryWarning(ctx, dbgen.RecordExpiryWarningParams{EnvironmentID: env.ID, ExpiresAt: env.ExpiresAt, Point: string(w)})
			if err != nil || n == 0 {
				return err
			}
			return outbox.Emit(ctx, db.Queries(tx), outbox.Event{Type: "environment.expiring", Subject: env.Name,
				Tenant: env.TenantID, Environment: env.ID, Data: map[string]any{"name": env.Name, "expires_at": env.ExpiresAt.UTC(),
					"warning": string(w), "expires_in_seconds": int64(env.ExpiresAt.Sub(now) / time.Second)}})
		})
		if err != nil {
			return fmt.Errorf("warn of expiry: %w", err)
		}
	}
	return nil
}

// expire takes an expired environment down once it is active or failed: one still being
// provisioned is taken down when that ends; one whose decommissioning failed is left to the
// people who retry it, so that a destroy that keeps failing is not tried once a minute. Its stack instances go first, each destroyed
// once; while any is left the environment waits, and one whose destroy failed keeps it
// waiting for a person.
func (e *Expirer) expire(ctx context.Context, queue jobs.Queue, row dbgen.ExpiringEnvironmentsRow) error {
	if s := lifecycle.EnvironmentStatus(row.Status); s != lifecycle.EnvironmentActive && s != lifecycle.EnvironmentFailed {
		return nil
	}
	q := db.Queries(e.pool)
	live, err := q.ExpiredEnvironmentInstances(ctx, dbgen.ExpiredEnvironmentInstancesParams{EnvironmentID: row.ID, Since: row.ExpiresAt})
	if err != nil {
		return err
	}
	if len(live) > 0 {
		for _, i := range live {
			if i.Asked || lifecycle.InstanceStatus(i.Status) == lifecycle.InstanceDestroying {
				continue
			}
			if err := e.instances(ctx, expiry, i.ID); err != nil {
				return fmt.Errorf("destroy stack instance %s of the expired environment: %w", i.Name, err)
			}
		}
		return nil
	}
	return db.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
		q := db.Queries(tx)
		env, err := q.LockEnvironment(ctx, row.ID)
		if err != nil {
			return err
		}
		// Extended, or taken down by a person, since it was read; or its decommissioning failed,
		// which a person retries.
		if s := lifecycle.EnvironmentStatus(env.Status); env.ExpiresAt == nil || env.ExpiresAt.After(time.Now()) || s != lifecycle.EnvironmentActive && s != lifecycle.EnvironmentFailed || failedIn(env) == decommission {
			return nil
		}
		if err := (&Lifecycle{pool: e.pool, jobs: queue}).StartDecommission(ctx, tx, expiry, env.ID); err != nil {
			return err
		}
		if err := audit.Record(ctx, q, audit.System, audit.Event{Tenant: env.TenantID, Action: "environment.expire", TargetType: "environment",
			TargetID: env.ID.String(), Diff: map[string]any{"name": env.Name, "expires_at": env.ExpiresAt.UTC()}}); err != nil {
			return err
		}
		return outbox.Emit(ctx, q, outbox.Event{Type: "environment.expired", Subject: env.Name,
			Tenant: env.TenantID, Environment: env.ID, Data: map[string]any{"name": env.Name, "expires_at": env.ExpiresAt.UTC()}})
	})
}
