package tenant_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/app/access"
	"nimbus/app/problem"
	"nimbus/app/tenant"
	"nimbus/db/dbgen"
	"nimbus/db/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

var admin = access.Principal{Email: "root@example.com", ProviderAdmin: true}

// newTenant makes an empty tenant and a user who belongs to nothing.
func newTenant(t *testing.T, pool *pgxpool.Pool) (tenantID, userID uuid.UUID) {
	t.Helper()
	err := pool.QueryRow(context.Background(), `
		WITH t AS (INSERT INTO tenants (name) VALUES ('acme') RETURNING id),
		u AS (INSERT INTO users (email, password_hash) VALUES ('ann@acme.example', 'x') RETURNING id)
		SELECT t.id, u.id FROM t, u`).Scan(&tenantID, &userID)
	if err != nil {
		t.Fatal(err)
	}
	return tenantID, userID
}

// TestDelete_StopsAConcurrentJoin holds a tenant's delete open after its count, has someone
// join the tenant meanwhile, and commits the delete: the join waits for it and finds the
// tenant gone, leaving no member in a deleted tenant.
func TestDelete_StopsAConcurrentJoin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := dbtest.Pool(t)
	svc := tenant.NewService(pool)
	tenantID, userID := newTenant(t, pool)

	del, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer del.Rollback(ctx)
	q := dbgen.New(del)
	if _, err := q.LockTenant(ctx, tenantID); err != nil {
		t.Fatal(err)
	}
	if c, err := q.TenantContents(ctx, tenantID); err != nil || c.Members != 0 {
		t.Fatalf("contents before the join: %+v, %v", c, err)
	}
	if n, err := q.DeleteTenant(ctx, tenantID); err != nil || n != 1 {
		t.Fatalf("delete: %d rows, %v", n, err)
	}

	joined := make(chan error, 1)
	go func() {
		_, err := svc.SetMember(ctx, admin, tenantID, userID, access.User)
		joined <- err
	}()
	dbtest.WaitForLockWait(ctx, t, pool, joined)
	if err := del.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	if err := <-joined; !errors.Is(err, problem.ErrNotFound) {
		t.Fatalf("join after the delete: %v, want not found", err)
	}
	var members int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM memberships WHERE tenant_id = $1`, tenantID).Scan(&members); err != nil {
		t.Fatal(err)
	}
	if members != 0 {
		t.Fatalf("the deleted tenant has %d members", members)
	}
}

// TestDelete_WaitsForAJoinInProgress is the other order: a join that holds the tenant first
// is counted by the delete, which refuses.
func TestDelete_WaitsForAJoinInProgress(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := dbtest.Pool(t)
	svc := tenant.NewService(pool)
	tenantID, userID := newTenant(t, pool)

	join, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer join.Rollback(ctx)
	if _, err := tenant.Join(ctx, dbgen.New(join), admin, tenantID, userID, access.User); err != nil {
		t.Fatal(err)
	}

	deleted := make(chan error, 1)
	go func() { deleted <- svc.Delete(ctx, admin, tenantID) }()
	dbtest.WaitForLockWait(ctx, t, pool, deleted)
	if err := join.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	var ve *problem.ValidationError
	if err := <-deleted; !errors.As(err, &ve) {
		t.Fatalf("delete of a tenant just joined: %v, want refused", err)
	}
	if _, err := svc.Get(ctx, admin, tenantID); err != nil {
		t.Fatalf("the tenant is gone: %v", err)
	}
}

// TestList_CountsMembersAsDeleteDoes: a deleted user is a member neither in the list of
// tenants nor in what keeps the tenant from being deleted, so an empty tenant says 0 members.
func TestList_CountsMembersAsDeleteDoes(t *testing.T) {
	ctx := context.Background()
	pool := dbtest.Pool(t)
	svc := tenant.NewService(pool)
	tenantID, userID := newTenant(t, pool)
	if _, err := svc.SetMember(ctx, admin, tenantID, userID, access.User); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE users SET deleted_at = now() WHERE id = $1`, userID); err != nil {
		t.Fatal(err)
	}
	list, err := svc.List(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].MemberCount != 0 {
		t.Fatalf("tenants: %+v, want acme with 0 members", list)
	}
	if err := svc.Delete(ctx, admin, tenantID); err != nil {
		t.Fatalf("delete of a tenant listed with 0 members: %v", err)
	}
	if _, err := svc.Get(ctx, admin, tenantID); !errors.Is(err, problem.ErrNotFound) {
		t.Fatalf("deleted tenant: %v, want not found", err)
	}
	if _, err := svc.SetMember(ctx, admin, tenantID, userID, access.User); !errors.Is(err, problem.ErrNotFound) {
		t.Fatalf("join of a deleted tenant: %v, want not found", err)
	}
}
