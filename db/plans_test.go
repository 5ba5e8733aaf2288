package db_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/db/dbtest"
)

// A statement's plan may be kept, but not one with an optional filter: that one runs unnamed,
// and Postgres plans it each time. Both on a pool and in a transaction.
func TestQueries_KeepPlansButOfStatementsWithOptionalFilters(t *testing.T) {
	ctx := context.Background()
	pool := dbtest.Pool(t)
	prepared := func(t *testing.T, x dbgen.DBTX) {
		q := db.Queries(x)
		if _, err := q.ListProviders(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := q.ListPools(ctx, dbgen.ListPoolsParams{AllTenants: true}); err != nil {
			t.Fatal(err)
		}
		rows, err := x.Query(ctx, "SELECT statement FROM pg_prepared_statements")
		if err != nil {
			t.Fatal(err)
		}
		statements, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		has := func(name string) bool {
			return slices.ContainsFunc(statements, func(s string) bool { return strings.Contains(s, "-- name: "+name+" ") })
		}
		if !has("ListProviders") {
			t.Errorf("ListProviders, a lookup without optional filters, is not a prepared statement")
		}
		if has("ListPools") {
			t.Errorf("ListPools, whose filters are optional, was prepared: its plan could be kept for any values")
		}
	}
	t.Run("transaction", func(t *testing.T) {
		if err := db.BeginFunc(ctx, pool, func(tx pgx.Tx) error { prepared(t, tx); return nil }); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("pool", func(t *testing.T) {
		conn, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Release()
		prepared(t, conn)
		// Postgres plans a statement for its values five times before it may keep a plan for any.
		for range 6 {
			if _, err := db.Queries(conn).CountUnreadNotifications(ctx, uuid.New()); err != nil {
				t.Fatal(err)
			}
		}
		var generic int64
		if err := conn.QueryRow(ctx, `SELECT generic_plans FROM pg_prepared_statements
			WHERE statement LIKE '-- name: CountUnreadNotifications %'`).Scan(&generic); err != nil {
			t.Fatal(err)
		}
		if generic == 0 {
			t.Errorf("a user's unread count was planned again at each of its runs on a pool's connection")
		}
	})
}

// Code that made its queries with dbgen.New would send every statement prepared, its plan kept
// for any values, optional filters and all.
func TestQueries_AreTheOnlyWayToTheGeneratedQueries(t *testing.T) {
	root := ".."
	// Where Queries is made, and this test.
	makers := map[string]bool{"db/plans.go": true, "db/lazy.go": true, "db/plans_test.go": true}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "dbgen" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() || !strings.HasSuffix(path, ".go") || makers[filepath.ToSlash(rel)] {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(src), "dbgen.New(") {
			t.Errorf("%s calls dbgen.New: use db.Queries", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
