package db

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"nimbus/migrations"
)

// Migration is one schema change and whether it has been applied.
type Migration struct {
	Version int
	Name    string
	Applied bool
	// AppliedAt is when it was applied; zero for River's migrations, which keep no time.
	AppliedAt time.Time
}

// migrationLock is the advisory lock key that keeps replicas from migrating at the same time.
const migrationLock = 0x6e696d627573 // "nimbus"

// Migrate applies Nimbus's pending migrations and River's, each in its own transaction, under an
// advisory lock so that replicas starting together migrate once.
func Migrate(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrationLock); err != nil {
		return fmt.Errorf("migrate: take lock: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", migrationLock) //nolint:errcheck // the lock dies with the session anyway

	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("migrate: create schema_migrations: %w", err)
	}
	status, err := migrationStatus(ctx, conn.Conn())
	if err != nil {
		return err
	}
	for _, m := range status {
		if m.Applied {
			continue
		}
		sql, err := fs.ReadFile(migrations.FS, m.file())
		if err != nil {
			return fmt.Errorf("migrate: read %s: %w", m.file(), err)
		}
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, string(sql)); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", m.Version, m.Name)
			return err
		})
		if err != nil {
			return fmt.Errorf("migrate: apply %s: %w", m.file(), err)
		}
		log.Info("migration applied", "version", m.Version, "name", m.Name)
	}

	migrator, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Logger: log})
	if err != nil {
		return fmt.Errorf("migrate river: %w", err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("migrate river: %w", err)
	}
	return nil
}

// MigrationStatus lists every known migration, Nimbus's and River's, and when each was applied.
func MigrationStatus(ctx context.Context, pool *pgxpool.Pool) (ours, river []Migration, err error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer conn.Release()
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass('schema_migrations') IS NOT NULL").Scan(&exists); err != nil {
		return nil, nil, err
	}
	if exists {
		ours, err = migrationStatus(ctx, conn.Conn())
	} else {
		ours, err = knownMigrations()
	}
	if err != nil {
		return nil, nil, err
	}
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return nil, nil, err
	}
	applied := map[int]bool{}
	existing, err := migrator.ExistingVersions(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("river migrations: %w", err)
	}
	for _, m := range existing {
		applied[m.Version] = true
	}
	for _, m := range migrator.AllVersions() {
		river = append(river, Migration{Version: m.Version, Name: m.Name, Applied: applied[m.Version]})
	}
	return ours, river, nil
}

// Pending counts the migrations of either kind not yet applied.
func Pending(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	ours, river, err := MigrationStatus(ctx, pool)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, m := range append(ours, river...) {
		if !m.Applied {
			n++
		}
	}
	return n, nil
}

func migrationStatus(ctx context.Context, conn *pgx.Conn) ([]Migration, error) {
	known, err := knownMigrations()
	if err != nil {
		return nil, err
	}
	rows, err := conn.Query(ctx, "SELECT version, applied_at FROM schema_migrations")
	if err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	applied := map[int]time.Time{}
	var (
		v  int
		at time.Time
	)
	_, err = pgx.ForEachRow(rows, []any{&v, &at}, func() error { applied[v] = at; return nil })
	if err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	for i := range known {
		known[i].AppliedAt, known[i].Applied = applied[known[i].Version]
	}
	return known, nil
}

func knownMigrations() ([]Migration, error) {
	entries, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, name := range entries {
		num, rest, ok := strings.Cut(strings.TrimSuffix(name, ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s: name must be NNNN_description.sql", name)
		}
		out = append(out, Migration{Version: v, Name: rest})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

func (m Migration) file() string { return fmt.Sprintf("%04d_%s.sql", m.Version, m.Name) }
