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
