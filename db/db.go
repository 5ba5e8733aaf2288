// Package db opens Nimbus's Postgres pool and runs its migrations and transactions. The
// generated query code lives in db/dbgen, the embedded server launcher in db/localpg.
package db

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/db/dbgen"
)

// Open connects a pool to the database at url and checks that it answers.
func Open(ctx context.Context, url string, maxConns int32) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("database url: %w", err)
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "nimbus"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	return pool, nil
}

// Tx runs fn in one transaction with queries bound to it (Queries): committed when fn returns
// nil, rolled back otherwise. Every write that must not half-happen goes through here.
func Tx(ctx context.Context, pool *pgxpool.Pool, fn func(q *dbgen.Queries) error) error {
	return BeginFunc(ctx, pool, func(tx pgx.Tx) error { return fn(Queries(tx)) })
}

// BeginFunc is pgx.BeginFunc, the one way Nimbus begins a transaction it runs statements in
// itself; fn's queries go through Queries(tx).
func BeginFunc(ctx context.Context, pool *pgxpool.Pool, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, pool, fn)
}

// lazyBegin lets the commit return before it reaches the disk (see LazyTx), sent in one round
// trip with its BEGIN.
const lazyBegin = "BEGIN; SET LOCAL synchronous_commit TO off"

// LazyTx is Tx for writes that a crash may lose without harm because whatever depends on them
// outside the database waits for a later commit: its commit returns as soon as the
// transaction is seen by everyone, before its record reaches the disk. A crash of the database
// may then lose it, but only together with every transaction committed after it, since the
// log is written in order: the next commit that waits (any Tx) makes it durable too.
func LazyTx(ctx context.Context, pool *pgxpool.Pool, fn func(q *dbgen.Queries) error) error {
	return pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{BeginQuery: lazyBegin}, func(tx pgx.Tx) error {
		return fn(Queries(tx))
	})
}

// ToldTx is BeginFunc for a change that others act on the moment it commits, such as an
// operation a worker is woken for, and that the caller is then told of. It commits as LazyTx
// does, so that the worker sees it at once, and returns only once the disk has it (Flush): the
// wait for the disk overlaps the worker's start instead of coming before it, and nothing the
// caller is told of can be lost. Whatever the worker does outside the database waits, as ever,
// for a commit of its own that waits for the disk, and so for this one too.
func ToldTx(ctx context.Context, pool *pgxpool.Pool, fn func(tx pgx.Tx) error) error {
	if err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{BeginQuery: lazyBegin}, fn); err != nil {
		return err
	}
	return Flush(ctx, pool)
}

// Flush returns once every commit made before it is on the disk. It writes a record of no
// consequence to the log (a message only logical decoding reads) in a transaction of its own,
// whose commit, synchronous_commit being on, waits until the log is on the disk up to it, and
// so up to every commit before it. A transaction that only takes an id would not wait: one
// that wrote nothing commits without flushing.
func Flush(ctx context.Context, pool *pgxpool.Pool) error {
	if _, err := pool.Exec(ctx, "SELECT pg_logical_emit_message(true, 'nimbus', '')"); err != nil {
		return fmt.Errorf("wait for the disk: %w", err)
	}
	return nil
}

// Unavailable reports whether err says the database could not be reached or went away (it is
// down, restarting or recovering), rather than that it refused what was asked.
func Unavailable(err error) bool {
	var (
		connect *pgconn.ConnectError
		pgErr   *pgconn.PgError
		netErr  net.Error
		request *url.Error
	)
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false // the request gave up (a browser navigated away), not the database
	case errors.As(err, &request):
		return false // an HTTP request's, such as one to object storage
	case errors.As(err, &connect):
		return true
	case errors.As(err, &pgErr):
		switch pgErr.Code {
		case pgerrcode.AdminShutdown, pgerrcode.CrashShutdown, pgerrcode.CannotConnectNow:
			return true
		}
		return pgerrcode.IsConnectionException(pgErr.Code)
	case errors.As(err, &netErr), errors.Is(err, net.ErrClosed), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	}
	// A connection found broken before anything was sent on it.
	return pgconn.SafeToRetry(err)
}

// IsUniqueViolation reports whether err is Postgres refusing a duplicate key, which two
// concurrent requests can reach even after a check found no duplicate.
func IsUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == pgerrcode.UniqueViolation
}

// IsExclusionViolation reports whether err is Postgres refusing a row that an exclusion
// constraint rules out, such as an address range overlapping one already taken.
func IsExclusionViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == pgerrcode.ExclusionViolation
}

// IsForeignKeyViolation reports whether err is Postgres refusing a row that names a row that
// is not there, such as a tenant given by ID that does not exist.
func IsForeignKeyViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == pgerrcode.ForeignKeyViolation
}
