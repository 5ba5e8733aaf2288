package db_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"nimbus/db"
	"nimbus/db/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

func TestMigrate_AppliesEverythingOnceAndIsIdempotent(t *testing.T) {
	ctx := context.Background()
	pool := dbtest.Pool(t)
	// The template is migrated already; running again must change nothing and fail nothing.
	if err := db.Migrate(ctx, pool, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatal(err)
	}
	ours, river, err := db.MigrationStatus(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(ours) == 0 || len(river) == 0 {
		t.Fatalf("expected migrations of both kinds, got %d ours and %d river", len(ours), len(river))
	}
	pending, err := db.Pending(ctx, pool)
	if err != nil || pending != 0 {
		t.Fatalf("pending = %d, %v; want 0", pending, err)
	}
}

func TestMigrationStatus_FreshDatabaseIsAllPending(t *testing.T) {
	ctx := context.Background()
	pool := dbtest.Pool(t)
	if _, err := pool.Exec(ctx, "DROP SCHEMA public CASCADE; CREATE SCHEMA public"); err != nil {
		t.Fatal(err)
	}
	pending, err := db.Pending(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	ours, river, _ := db.MigrationStatus(ctx, pool)
	if pending != len(ours)+len(river) {
		t.Fatalf("pending = %d, want all %d", pending, len(ours)+len(river))
	}
}

// A query a request gave up on fails with an error that says the request went, not the
// database: such requests must not be answered, or logged, as an outage.
func TestUnavailable_NotForARequestThatGaveUp(t *testing.T) {
	pool := dbtest.Pool(t)
	conn, err := pool.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	// Gone after its connection was taken, before the query was sent: the driver says it is
	// safe to try again, which alone does not tell a dead server.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var one int
	err = conn.QueryRow(ctx, `SELECT 1`).Scan(&one)
	if err == nil {
		t.Fatal("a cancelled query answered")
	}
	if db.Unavailable(err) {
		t.Errorf("Unavailable(%v) = true for a cancelled request", err)
	}
	if err := pool.QueryRow(context.Background(), `SELECT 1`).Scan(&one); err != nil || db.Unavailable(err) {
		t.Fatalf("the database after: %v", err)
	}
}
