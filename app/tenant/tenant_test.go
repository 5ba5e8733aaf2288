package tenant_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
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

// TestDeletedTenant_LeavesTheListsOfLiveThings: once a tenant is deleted, its deployments,
// environments, pools, approval requests and environment policies are listed nowhere and read
// as not found; its history stays in the audit log.
func TestDeletedTenant_LeavesTheListsOfLiveThings(t *testing.T) {
	ctx := context.Background()
	pool := dbtest.Pool(t)
	d := dbtest.NewDeployment(t, pool)
	var poolID uuid.UUID
	err := pool.QueryRow(ctx, `
		WITH p AS (INSERT INTO ipam_pools (tenant_id, environment_id, name, prefix) VALUES ($1, $2, 'lan', '10.0.0.0/24') RETURNING id),
		r AS (INSERT INTO approval_requests (operation_id, tenant_id, approvals_required, approver_role, previewed_at, expires_at)
			VALUES ($3, $1, 1, 'user', now(), now() + interval '1 hour')),
		a AS (INSERT INTO approval_policies (scope, scope_id, operations, approver_role) VALUES ('environment', $2, '{deploy}', 'user'))
		SELECT id FROM p`, d.TenantID, d.EnvironmentID, d.OperationID).Scan(&poolID)
	if err != nil {
		t.Fatal(err)
	}
	q := dbgen.New(pool)
	listed := func() map[string]int {
		t.Helper()
		deps, err := q.ListDeployments(ctx, dbgen.ListDeploymentsParams{AllTenants: true, MaxRows: 10})
		if err != nil {
			t.Fatal(err)
		}
		sorted, err := q.ListDeploymentsBy(ctx, dbgen.ListDeploymentsByParams{SortBy: "tenant", AllTenants: true, MaxRows: 10})
		if err != nil {
			t.Fatal(err)
		}
		pools, err := q.ListPools(ctx, dbgen.ListPoolsParams{AllTenants: true})
		if err != nil {
			t.Fatal(err)
		}
		reqs, err := q.ListApprovalRequests(ctx, dbgen.ListApprovalRequestsParams{AllTenants: true, MaxRows: 10})
		if err != nil {
			t.Fatal(err)
		}
		policies, err := q.ListApprovalPolicies(ctx, dbgen.ListApprovalPoliciesParams{AllTenants: true})
		if err != nil {
			t.Fatal(err)
		}
		found := func(err error) int {
			switch {
			case err == nil:
				return 1
			case errors.Is(err, pgx.ErrNoRows):
				return 0
			}
			t.Fatal(err)
			return 0
		}
		_, envErr := q.GetEnvironment(ctx, d.EnvironmentID)
		_, poolErr := q.GetPool(ctx, poolID)
		return map[string]int{"deployments": len(deps), "deployments by tenant": len(sorted), "pools": len(pools),
			"approval requests": len(reqs), "approval policies": len(policies), "environment": found(envErr), "pool": found(poolErr)}
	}
	for what, n := range listed() {
		if n != 1 {
			t.Fatalf("live tenant: %d %s, want 1", n, what)
		}
	}
	if _, err := pool.Exec(ctx, `UPDATE tenants SET deleted_at = now() WHERE id = $1`, d.TenantID); err != nil {
		t.Fatal(err)
	}
	for what, n := range listed() {
		if n != 0 {
			t.Errorf("deleted tenant: %d %s, want none", n, what)
		}
	}
}
