package tenant_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/app/domain/tenant"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/objstore/s3test"
	"nimbus/app/kernel/outbox"
	"nimbus/app/kernel/problem"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/db/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(s3test.Around(m)) }

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
	q := db.Queries(del)
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
	if _, err := tenant.Join(ctx, db.Queries(join), admin, tenantID, userID, access.User); err != nil {
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
	q := db.Queries(pool)
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

// decommissioning makes tenant acme, its removal asked for, with a namespace on each of n
// clusters made by a factory instance of the provider's; the first instance is destroyed, as a
// destroy run leaves it when it tells RemoveWhenDecommissioned, the others are still active.
func decommissioning(t *testing.T, pool *pgxpool.Pool, n int) (tenantID uuid.UUID, destroyed dbgen.StackInstance) {
	t.Helper()
	ctx := context.Background()
	err := pool.QueryRow(ctx, `INSERT INTO tenants (name, removal_requested_at) VALUES ('acme', now()) RETURNING id`).Scan(&tenantID)
	if err != nil {
		t.Fatal(err)
	}
	var envID, providerID, stackID uuid.UUID
	err = pool.QueryRow(ctx, `
		WITH t AS (INSERT INTO tenants (name) VALUES ('provider') RETURNING id),
		e AS (INSERT INTO environments (tenant_id, name) SELECT id, 'system' FROM t RETURNING id, tenant_id),
		s AS (INSERT INTO stacks (provider_id, name) SELECT id, 'tenant-factory' FROM semantic_providers LIMIT 1 RETURNING id),
		v AS (INSERT INTO stack_versions (stack_id, version, definition, changelog) SELECT id, 1, '{}', 'first' FROM s RETURNING stack_id)
		SELECT e.id, e.tenant_id, v.stack_id FROM e, v`).Scan(&envID, &providerID, &stackID)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		status := "active"
		if i == 0 {
			status = "destroyed"
		}
		var id uuid.UUID
		err := pool.QueryRow(ctx, `
			WITH z AS (INSERT INTO landing_zones (name, provider) SELECT 'cluster-' || $6, name FROM semantic_providers LIMIT 1 RETURNING id),
			i AS (INSERT INTO stack_instances (tenant_id, environment_id, stack_id, version, name, status)
				VALUES ($2, $3, $4, 1, 'acme', $5) RETURNING id),
			n AS (INSERT INTO tenant_namespaces (tenant_id, landing_zone_id, namespace, stack_instance_id)
				SELECT $1, z.id, 'acme', i.id FROM z, i)
			SELECT id FROM i`, tenantID, providerID, envID, stackID, status, strconv.Itoa(i)).Scan(&id)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			destroyed = dbgen.StackInstance{ID: id}
		}
	}
	return tenantID, destroyed
}

// TestRemoveWhenDecommissioned: the destroy of a tenant's last namespace removes the tenant whose
// removal was asked for, once however often it is told; one that namespaces are still leaving waits for them, and one that came
// to hold something else meanwhile stays, no longer being removed. Each step is in the audit log.
func TestRemoveWhenDecommissioned(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name       string
		namespaces int
		member     bool
		removed    bool // the tenant is deleted
		marked     bool // the tenant left is still being removed
		audited    string
	}{
		{name: "last namespace", namespaces: 1, removed: true, audited: "tenant.delete"},
		{name: "another namespace left", namespaces: 2, marked: true},
		{name: "a member joined meanwhile", namespaces: 1, member: true, audited: "tenant.remove_stopped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool := dbtest.Pool(t)
			tenantID, inst := decommissioning(t, pool, tc.namespaces)
			if tc.member {
				_, err := pool.Exec(ctx, `
					WITH u AS (INSERT INTO users (email, password_hash) VALUES ('ann@acme.example', 'x') RETURNING id)
					INSERT INTO memberships (user_id, tenant_id, role) SELECT id, $1, 'user' FROM u`, tenantID)
				if err != nil {
					t.Fatal(err)
				}
			}
			// A reaction runs again when routing its event is retried: the second time changes nothing.
			destroyed := outbox.Logged{Type: "stack.destroyed", Instance: inst.ID}
			for range 2 {
				if err := db.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return tenant.RemoveWhenDecommissioned(ctx, tx, destroyed) }); err != nil {
					t.Fatal(err)
				}
			}

			var removed, marked bool
			var actions []string
			err := pool.QueryRow(ctx, `
				SELECT deleted_at IS NOT NULL, removal_requested_at IS NOT NULL,
					coalesce((SELECT array_agg(action ORDER BY id) FROM audit_events WHERE target_id = $2), '{}')
				FROM tenants WHERE id = $1`, tenantID, tenantID.String()).Scan(&removed, &marked, &actions)
			if err != nil {
				t.Fatal(err)
			}
			if removed != tc.removed || !removed && marked != tc.marked {
				t.Errorf("removed %v, still being removed %v; want %v, %v", removed, marked, tc.removed, tc.marked)
			}
			want := []string{}
			if tc.audited != "" {
				want = []string{tc.audited}
			}
			if strings.Join(actions, ",") != strings.Join(want, ",") {
				t.Errorf("audited %v, want %v", actions, want)
			}
		})
	}
}
