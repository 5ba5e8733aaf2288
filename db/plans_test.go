package db_test

import (
	"context"
	"strings"
	"testing"

	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/db/dbtest"
)

// A statement run through Reused is one of its connection's prepared statements, whose plan
// Postgres may keep; one with an optional filter is not, and is planned for its values each
// time, as every statement run on the pool itself is.
func TestReused_KeepsPlansButOfStatementsWithOptionalFilters(t *testing.T) {
	ctx := context.Background()
	pool := dbtest.Pool(t)
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	q := db.Reused(tx)
	if _, err := q.ListProviders(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := q.ListPools(ctx, dbgen.ListPoolsParams{AllTenants: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT count(*) FROM tenants WHERE $1::text IS NULL OR name = $1", "plain"); err != nil {
		t.Fatal(err)
	}
	prepared := map[string]bool{}
	rows, err := tx.Query(ctx, "SELECT statement FROM pg_prepared_statements")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		prepared[s] = true
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	has := func(name string) bool {
		for s := range prepared {
			if strings.Contains(s, "-- name: "+name+" ") {
				return true
			}
		}
		return false
	}
	if !has("ListProviders") {
		t.Errorf("ListProviders, a lookup without optional filters, is not a prepared statement: %v", prepared)
	}
	if has("ListPools") {
		t.Errorf("ListPools, whose filters are optional, was prepared: its plan would be kept for any values")
	}
	for s := range prepared {
		if strings.Contains(s, "FROM tenants WHERE $1::text IS NULL") {
			t.Errorf("a statement run on the pool itself was prepared: %s", s)
		}
	}
}
