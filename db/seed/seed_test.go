package seed_test

import (
	"context"
	"testing"
	"time"

	"nimbus/db/dbtest"
	"nimbus/db/seed"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

func TestRun_FillsEveryTable(t *testing.T) {
	pool := dbtest.Pool(t)
	ctx := context.Background()
	start := time.Now()
	if err := seed.Run(ctx, pool, seed.Full, "x"); err != nil {
		t.Fatal(err)
	}
	t.Log(time.Since(start))
	for _, table := range []string{"tenants", "users", "components", "component_versions", "deployed_components", "operations", "operation_steps", "operation_resources", "operation_logs", "approval_requests", "audit_events"} {
		var n int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		t.Log(table, n)
	}
}
