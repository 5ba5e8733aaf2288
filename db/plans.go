package db

import (
	"context"
	"regexp"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"nimbus/db/dbgen"
)

// How Postgres plans Nimbus's statements. The pool runs each as an unnamed statement, which
// Postgres plans for the values at hand every time: the list queries take optional filters and
// cursors as "$n IS NULL OR column = $n", and a plan made once for any values must keep both
// branches and walk the whole list, filtering (a tenant's 200 operations read by walking
// 20,000). Planning costs a fraction of a millisecond a statement, though, and an operation
// runs some sixty of them before its engine starts, each the same lookup of a row by its key
// every time: those run through Reused, as statements Postgres may plan once and keep.

// Reused is the queries of x run as the connection's prepared statements, whose plans Postgres
// may keep once it has seen that they do not depend on the values; a statement with optional
// filters is still planned for its values each time.
func Reused(x dbgen.DBTX) *dbgen.Queries { return dbgen.New(reused{x}) }

type reused struct{ dbgen.DBTX }

func (r reused) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return r.DBTX.Exec(ctx, sql, keep(sql, args)...)
}

func (r reused) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return r.DBTX.Query(ctx, sql, keep(sql, args)...)
}

func (r reused) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return r.DBTX.QueryRow(ctx, sql, keep(sql, args)...)
}

// optionalFilter finds a condition a value may switch off.
var optionalFilter = regexp.MustCompile(`(?i)\bIS\s+NULL\s+OR\b`)

// planned remembers, by statement, whether its plan depends on its values.
var planned sync.Map

// keep asks for sql to run as a prepared statement, unless its plan depends on its values.
func keep(sql string, args []any) []any {
	dependent, ok := planned.Load(sql)
	if !ok {
		dependent, _ = planned.LoadOrStore(sql, optionalFilter.MatchString(sql))
	}
	if dependent.(bool) {
		return args
	}
	return append([]any{pgx.QueryExecModeCacheStatement}, args...)
}
