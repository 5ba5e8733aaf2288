package db

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/db/dbgen"
)

// Lazy is queries each run as a transaction of its own whose commit does not wait for the disk,
// as LazyTx's does, sent with its settings in one round trip where LazyTx takes three (BEGIN,
// the statement, COMMIT). For a write that is one statement and may be lost in a crash of the
// database, together with every later one (see LazyTx); its plan may be kept, as in Queries.
//
// The settings and the statement go as one pgx batch, which Postgres runs as one implicit
// transaction: the settings hold until it commits, after the statement.
func Lazy(pool *pgxpool.Pool) *dbgen.Queries { return dbgen.New(lazy{pool}) }

type lazy struct{ pool *pgxpool.Pool }

// lazySettings are lazyBegin's, for a transaction without BEGIN.
const lazySettings = "SELECT set_config('synchronous_commit', 'off', true)"

// send queues the settings and the statement, and reads the settings' answer.
func (l lazy) send(ctx context.Context, sql string, args []any) (pgx.BatchResults, error) {
	b := &pgx.Batch{}
	b.Queue(lazySettings)
	b.Queue(sql, args...)
	res := l.pool.SendBatch(ctx, b)
	if _, err := res.Exec(); err != nil {
		_ = res.Close()
		return nil, err
	}
	return res, nil
}

func (l lazy) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	res, err := l.send(ctx, sql, args)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := res.Exec()
	if closeErr := res.Close(); err == nil {
		err = closeErr
	}
	return tag, err
}

func (l lazy) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	res, err := l.send(ctx, sql, args)
	if err != nil {
		return nil, err
	}
	rows, err := res.Query()
	if err != nil {
		_ = res.Close()
		return nil, err
	}
	return &lazyRows{Rows: rows, res: res}, nil
}

func (l lazy) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, err := l.Query(ctx, sql, args...)
	return lazyRow{rows: rows, err: err}
}

// lazyRows are a statement's rows, which give the connection back, once read, by closing
// their batch: that commits the transaction.
type lazyRows struct {
	pgx.Rows
	res pgx.BatchResults
	err error
}

func (r *lazyRows) Close() {
	r.Rows.Close()
	if r.res != nil {
		r.err, r.res = r.res.Close(), nil
	}
}

func (r *lazyRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

// lazyRow is QueryRow's answer, as pgx's: the first row, or pgx.ErrNoRows.
type lazyRow struct {
	rows pgx.Rows
	err  error
}

func (r lazyRow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		r.rows.Close()
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}

// LazySessions returns a pool on pool's database, configured as pool is, whose every commit
// returns before it reaches the disk; the caller closes it. It is River's: River's own writes
// (a job fetched, completed, snoozed, rescheduled) can be lost in a crash of the database with
// no harm done, since River runs a job at least once and every worker is safe run twice,
// while its fetch stands between a request and the work it queued. The jobs themselves are
// queued in Nimbus's transactions, on the other pool, and durable as they are.
func LazySessions(ctx context.Context, pool *pgxpool.Pool) (*pgxpool.Pool, error) {
	cfg := pool.Config().Copy()
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	lazy, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	return lazy, nil
}
