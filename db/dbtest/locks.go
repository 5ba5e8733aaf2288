package dbtest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// WaitForLockWait returns once another session of pool's database waits for a lock, failing
// the test if the work meant to wait finishes first (done) or ctx ends.
func WaitForLockWait(ctx context.Context, tb testing.TB, pool *pgxpool.Pool, done <-chan error) {
	tb.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		var waiting bool
		err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND wait_event_type = 'Lock')`).Scan(&waiting)
		if err != nil {
			tb.Fatal(err)
		}
		if waiting {
			return
		}
		select {
		case err := <-done:
			tb.Fatalf("finished without waiting for the lock: %v", err)
		case <-ctx.Done():
			tb.Fatal("nobody waited for the lock")
		case <-tick.C:
		}
	}
}
