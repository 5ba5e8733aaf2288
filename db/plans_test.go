package db_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/db/dbtest"
)

// Outside the transactions begun here, every statement is planned for its values. Inside, a
// statement's plan may be kept, but not one with an optional filter: that one runs unnamed,
// and Postgres plans it each time.
func TestReused_KeepsPlansButOfStatementsWithOptionalFilters(t *testing.T) {
	ctx := context.Background()
	pool := dbtest.Pool(t)
	var outside string
	if err := pool.QueryRow(ctx, "SHOW plan_cache_mode").Scan(&outside); err != nil {
		t.Fatal(err)
	}
	if outside != "force_custom_plan" {
		t.Errorf("outside a transaction of its own, plan_cache_mode is %s", outside)
	}
	err := db.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var inside string
		if err := tx.QueryRow(ctx, "SHOW plan_cache_mode").Scan(&inside); err != nil {
			return err
		}
		if inside != "auto" {
			t.Errorf("inside, plan_cache_mode is %s", inside)
		}
		q := db.Reused(tx)
		if _, err := q.ListProviders(ctx); err != nil {
			return err
		}
		if _, err := q.ListPools(ctx, dbgen.ListPoolsParams{AllTenants: true}); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, "SELECT statement FROM pg_prepared_statements")
		if err != nil {
			return err
		}
		statements, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		has := func(name string) bool {
			for _, s := range statements {
				if strings.Contains(s, "-- name: "+name+" ") {
					return true
				}
			}
			return false
		}
		if !has("ListProviders") {
			t.Errorf("ListProviders, a lookup without optional filters, is not a prepared statement")
		}
		if has("ListPools") {
			t.Errorf("ListPools, whose filters are optional, was prepared: its plan could be kept for any values")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
