package environment

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/db"
	"nimbus/db/dbtest"
)

// TestCreate_StopsAtATenantBeingDeleted opens an environment while the tenant's delete is
// held open past its count: the create waits for the delete and is refused, leaving no
// environment in a deleted tenant.
func TestCreate_StopsAtATenantBeingDeleted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := dbtest.Pool(t)
	var tenant uuid.UUID
	if err := pool.QueryRow(ctx, `INSERT INTO tenants (name) VALUES ('acme') RETURNING id`).Scan(&tenant); err != nil {
		t.Fatal(err)
	}
	del, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer del.Rollback(ctx)
	q := db.Queries(del)
	if _, err := q.LockTenant(ctx, tenant); err != nil {
		t.Fatal(err)
	}
	if n, err := q.DeleteTenant(ctx, tenant); err != nil || n != 1 {
		t.Fatalf("delete: %d rows, %v", n, err)
	}

	created := make(chan error, 1)
	go func() {
		_, err := NewService(pool).Create(ctx, access.Principal{Email: "root@example.com", ProviderAdmin: true}, tenant, "dev")
		created <- err
	}()
	dbtest.WaitForLockWait(ctx, t, pool, created)
	if err := del.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	if err := <-created; problem.FieldOf(err) != "tenant_id" {
		t.Fatalf("environment in a tenant just deleted: %v, want the tenant refused", err)
	}
	var envs int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM environments WHERE tenant_id = $1`, tenant).Scan(&envs); err != nil {
		t.Fatal(err)
	}
	if envs != 0 {
		t.Fatalf("the deleted tenant has %d environments", envs)
	}
}
