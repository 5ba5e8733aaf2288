package db

import (
	"context"
	"regexp"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"nimbus/db/dbgen"
)

// How Postgres plans Nimbus's statements. Most are the same lookup every time (a row by its
// key, a count of a user's unread notices): planning one again at each call cost more than
// running it (half a page's database time at the seeded scale), so Postgres may keep their
// plans once it has seen that they do not depend on the values. The list queries take optional
// filters and cursors as "$n IS NULL OR column = $n", or a switch ("all tenants"): a plan kept
// for any values must keep both branches and walk the whole list, filtering. Those run unnamed,
// which Postgres plans each time for the values at hand, unless they say their switch picks no
// index. A value a partial index is chosen by (a status) is spelled in the statement, never
// passed: a kept plan cannot know it (the dashboard's operations took 70 ms so, instead of 2).
// Every statement goes through Queries to be told apart, which
// TestQueries_AreTheOnlyWayToTheGeneratedQueries holds.

// Queries is the generated queries over x, a pool or a transaction: those with optional
// filters run as unnamed statements, planned for their values each time; the others as the
// connection's prepared statements, whose plans Postgres may keep.
func Queries(x dbgen.DBTX) *dbgen.Queries { return dbgen.New(reused{x}) }

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

// optionalFilter finds a condition a value may switch off: "$n IS NULL OR …", or a switch such as
// "$n::boolean OR tenant_id = ANY(…)" (all tenants, or the given ones).
var optionalFilter = regexp.MustCompile(`(?i)\bIS\s+NULL\s+OR\b|\$\d+::bool`)

// kept marks a statement whose switch picks no index, so that one plan serves every value: its
// text says "-- plan: kept" and why.
var kept = regexp.MustCompile(`--\s*plan:\s*kept\b`)

// dependent remembers, by statement, whether its plan depends on its values.
var dependent sync.Map

// mode runs sql unnamed when its plan depends on its values.
func mode(sql string, args []any) []any {
	d, ok := dependent.Load(sql)
	if !ok {
		d, _ = dependent.LoadOrStore(sql, optionalFilter.MatchString(sql) && !kept.MatchString(sql))
	}
	if d.(bool) {
		return append([]any{pgx.QueryExecModeCacheDescribe}, args...)
	}
	return args
}
