package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"nimbus/db/dbgen"
)

// PerTenant bounds how much of one tenant's work of one kind (component checks, operations)
// runs at once, on every node together.
//
// The bound is kept in Postgres, so that it holds across replicas: a worker takes a place for
// its work in a transaction that first locks the tenant's places (an advisory lock held to the
// end of the transaction) and then counts the tenant's work running, from the work's own rows.
// At the bound it takes nothing and its job snoozes (river.JobSnooze, which costs no attempt):
// the work stays queued and the worker is free at once for the next job, another tenant's,
// which therefore never waits behind this one's. A snoozed job comes back after Wait, behind
// the jobs queued before that, so a tenant's work runs in turn as places free up. Work of the
// provider itself (a NULL tenant) counts as one more tenant.
type PerTenant struct {
	// Scope names what is counted; each scope has places of its own.
	Scope string
	// Limit is how many of one tenant's run at once.
	Limit int
	// Wait is how long a job that found no place waits before it asks again.
	Wait time.Duration
}

// Room locks the tenant's places for the rest of the transaction q runs in, then reports
// whether the work running, as running counts it after the lock, leaves a place. The caller
// takes the place (marks its work running) in the same transaction.
func (p PerTenant) Room(ctx context.Context, q *dbgen.Queries, tenant uuid.NullUUID, running func() (int64, error)) (bool, error) {
	if err := q.LockTenantPlaces(ctx, dbgen.LockTenantPlacesParams{Scope: p.Scope, TenantID: tenant}); err != nil {
		return false, fmt.Errorf("lock the tenant's places of %s: %w", p.Scope, err)
	}
	n, err := running()
	if err != nil {
		return false, fmt.Errorf("count the tenant's %s: %w", p.Scope, err)
	}
	return n < int64(p.Limit), nil
}

// Snooze is what a job returns when its tenant had no place: it asks again after Wait, without
// spending an attempt.
func (p PerTenant) Snooze() error { return river.JobSnooze(p.Wait) }
