package db

import (
	"context"
	"regexp"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"nimbus/db/dbgen"
)

// How Postgres plans Nimbus's statements. The pool's sessions plan every statement for its
// values (see Open): the list queries take optional filters and cursors, and a plan kept for any
// values walks whole tables. Planning costs a fraction of a millisecond a statement, though,
// and an operation runs dozens of them before its engine starts, each the same lookup of a row
// by its key every time. So the transactions begun here (Tx, LazyTx, BeginFunc) let Postgres
// keep the plans of their statements once it has seen that they do not depend on the values,
// and their statements with optional filters run unnamed, which Postgres plans each time.

// Reused is the queries of x, a transaction begun here: those with optional filters run as
// unnamed statements, planned for their values each time; the others as the connection's
// prepared statements, whose plans the transaction lets Postgres keep.
func Reused(x dbgen.DBTX) *dbgen.Queries { return dbgen.New(reused{x}) }

type reused struct{ dbgen.DBTX }

func (r reused) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return r.DBTX.Exec(ctx, sql, mode(sql, args)...)
}

func (r reused) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return r.DBTX.Query(ctx, sql, mode(sql, args)...)
}

func (r reused) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return r.DBTX.QueryRow(ctx, sql, mode(sql, args)...)
}

// optionalFilter finds a condition a value may switch off.
var optionalFilter = regexp.MustCompile(`(?i)\bIS\s+NULL\s+OR\b`)

// dependent remembers, by statement, whether its plan depends on its values.
var dependent sync.Map

// mode runs sql unnamed when its plan depends on its values.
func mode(sql string, args []any) []any {
	d, ok := dependent.Load(sql)
	if !ok {
		d, _ = dependent.LoadOrStore(sql, optionalFilter.MatchString(sql))
	}
	if d.(bool) {
		return append([]any{pgx.QueryExecModeCacheDescribe}, args...)
	}
	return args
}
