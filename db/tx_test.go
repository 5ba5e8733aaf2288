package db_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/db/dbtest"
)

// A lazy transaction commits without waiting for the disk, and only it: the connection's next
// transaction waits again. It is all or none like any other.
func TestLazyTx_OnlyItsOwnCommitSkipsTheDisk(t *testing.T) {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(dbtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1 // every transaction below on one connection
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "on"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	// Each tenant made notes whether the transaction that made it waits for the disk.
	_, err = pool.Exec(ctx, `
		CREATE TABLE commit_modes (name text, sync text);
		CREATE FUNCTION note_commit_mode() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO commit_modes VALUES (NEW.name, current_setting('synchronous_commit'));
			RETURN NEW;
		END $$;
		CREATE TRIGGER note_commit_mode AFTER INSERT ON tenants FOR EACH ROW EXECUTE FUNCTION note_commit_mode();`)
	if err != nil {
		t.Fatal(err)
	}
	tenant := func(name string, fail error) func(q *dbgen.Queries) error {
		return func(q *dbgen.Queries) error {
			if _, err := q.CreateTenant(ctx, name); err != nil {
				return err
			}
			return fail
		}
	}
	if err := db.LazyTx(ctx, pool, tenant("lazy", nil)); err != nil {
		t.Fatal(err)
	}
	if err := db.Tx(ctx, pool, tenant("durable", nil)); err != nil {
		t.Fatal(err)
	}
	refused := errors.New("refused")
	if err := db.LazyTx(ctx, pool, tenant("rolled back", refused)); !errors.Is(err, refused) {
		t.Fatalf("got %v, want the error that rolled it back", err)
	}
	rows, err := pool.Query(ctx, "SELECT name || ' ' || sync FROM commit_modes ORDER BY name")
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != "durable on" || got[1] != "lazy off" {
		t.Fatalf("commits %v, want [durable on, lazy off]: the lazy one alone skips the disk, the rolled back one is gone", got)
	}
}

// A lazy statement is a transaction of its own that commits without waiting for the disk, and
// only it: the connection's next statement waits again. Its rows and its errors come back as
// any statement's.
func TestLazy_OnlyItsOwnStatementSkipsTheDisk(t *testing.T) {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(dbtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1 // every statement below on one connection
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "on"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	_, err = pool.Exec(ctx, `
		CREATE TABLE commit_modes (name text, sync text);
		CREATE FUNCTION note_commit_mode() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO commit_modes VALUES (NEW.name, current_setting('synchronous_commit'));
			RETURN NEW;
		END $$;
		CREATE TRIGGER note_commit_mode AFTER INSERT ON tenants FOR EACH ROW EXECUTE FUNCTION note_commit_mode();`)
	if err != nil {
		t.Fatal(err)
	}
	lazy := db.Lazy(pool)
	made, err := lazy.CreateTenant(ctx, "lazy")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Queries(pool).CreateTenant(ctx, "durable"); err != nil {
		t.Fatal(err)
	}
	if _, err := lazy.CreateTenant(ctx, "lazy"); !db.IsUniqueViolation(err) {
		t.Fatalf("a second tenant of the same name: got %v, want a unique violation", err)
	}
	if got, err := lazy.GetTenant(ctx, made.ID); err != nil || got.Name != "lazy" {
		t.Fatalf("read back: %v, %v", got, err)
	}
	if _, err := lazy.GetTenant(ctx, uuid.New()); !errors.Is(err, pgx.ErrNoRows) {
		t.Fatalf("a tenant that is not there: got %v, want pgx.ErrNoRows", err)
	}
	rows, err := pool.Query(ctx, "SELECT name || ' ' || sync FROM commit_modes ORDER BY name")
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != "durable on" || got[1] != "lazy off" {
		t.Fatalf("commits %v, want [durable on, lazy off]: the lazy one alone skips the disk", got)
	}
}

// A told transaction commits without waiting for the disk, so that a worker it wakes sees it
// at once, and returns only once the disk has it: the caller may tell of it.
func TestToldTx_CommitsBeforeTheDiskAndReturnsOnceItHasIt(t *testing.T) {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(dbtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "on"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	var mode string
	var written pgtype.Text
	err = db.ToldTx(ctx, pool, func(tx pgx.Tx) error {
		if _, err := db.Queries(tx).CreateTenant(ctx, "told"); err != nil {
			return err
		}
		return tx.QueryRow(ctx, "SELECT current_setting('synchronous_commit'), pg_current_wal_insert_lsn()::text").Scan(&mode, &written)
	})
	if err != nil {
		t.Fatal(err)
	}
	// The commit's record comes after everything the transaction wrote.
	var flushed bool
	if err := pool.QueryRow(ctx, "SELECT pg_current_wal_flush_lsn() > $1::pg_lsn", written.String).Scan(&flushed); err != nil {
		t.Fatal(err)
	}
	if mode != "off" || !flushed {
		t.Fatalf("commit waited for the disk: %v (want off), on the disk when it returned: %v (want true)", mode, flushed)
	}
	refused := errors.New("refused")
	if err := db.ToldTx(ctx, pool, func(tx pgx.Tx) error { return refused }); !errors.Is(err, refused) {
		t.Fatalf("got %v, want the error that rolled it back", err)
	}
}
