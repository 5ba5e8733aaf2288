package environment

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/objstore/s3test"
	"nimbus/app/kernel/problem"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/db/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(s3test.Around(m)) }

// TestTransitions_RefuseIllegalMovesAndRetryWhatFailed walks an environment through its life,
// checking at each status that a move it does not allow is refused and changes nothing, and that
// a retry takes up the transition recorded as failed, whatever the reason says.
func TestTransitions_RefuseIllegalMovesAndRetryWhatFailed(t *testing.T) {
	ctx := context.Background()
	pool := dbtest.Pool(t)
	var tenant uuid.UUID
	if err := pool.QueryRow(ctx, `INSERT INTO tenants (name) VALUES ('Tenant') RETURNING id`).Scan(&tenant); err != nil {
		t.Fatal(err)
	}
	var id uuid.UUID
	inTx := func(f func(q *dbgen.Queries) error) error {
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return f(db.Queries(tx)) })
	}
	status := func() (lifecycle.EnvironmentStatus, *string) {
		t.Helper()
		env, err := db.Queries(pool).LockEnvironment(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return lifecycle.EnvironmentStatus(env.Status), env.FailedTransition
	}
	want := func(s lifecycle.EnvironmentStatus, failed transition) {
		t.Helper()
		got, in := status()
		if got != s || (in == nil) != (failed == "") || in != nil && transition(*in) != failed {
			t.Fatalf("environment is %s (failed in %v), want %s (failed in %q)", got, in, s, failed)
		}
	}
	refused := func(what string, f func(q *dbgen.Queries) error) {
		t.Helper()
		before, _ := status()
		if err := inTx(f); problem.FieldOf(err) != "status" {
			t.Fatalf("%s from %s: %v, want a refusal of the status", what, before, err)
		}
		if after, _ := status(); after != before {
			t.Fatalf("a refused %s moved the environment from %s to %s", what, before, after)
		}
	}
	do := func(what string, f func(q *dbgen.Queries) error) {
		t.Helper()
		if err := inTx(f); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	activateIt := func(q *dbgen.Queries) error { return activate(ctx, q, id) }
	provisionIt := func(q *dbgen.Queries) error { return startProvisioning(ctx, q, id, uuid.Nil) }
	decommissionIt := func(q *dbgen.Queries) error { return startDecommissioning(ctx, q, id, uuid.Nil) }
	finishIt := func(q *dbgen.Queries) error { return finishDecommissioning(ctx, q, id) }
	failIt := func(q *dbgen.Queries) error { return fail(ctx, q, id, "Decommissioning stopped: nothing of the kind") }
	retryIt := func(q *dbgen.Queries) error { _, err := retry(ctx, q, id, uuid.Nil); return err }

	do("create", func(q *dbgen.Queries) error {
		env, err := create(ctx, q, dbgen.CreateEnvironmentParams{TenantID: tenant, Name: "dev"})
		id = env.ID
		return err
	})
	want(lifecycle.EnvironmentActive, "") // bare
	refused("provision", provisionIt)
	refused("fail", failIt)
	refused("finish", finishIt)
	refused("retry", retryIt)

	do("decommission", decommissionIt)
	refused("activate", activateIt)
	refused("provision", provisionIt)
	do("fail", func(q *dbgen.Queries) error { return fail(ctx, q, id, "web did not deploy") })
	want(lifecycle.EnvironmentFailed, decommission)
	refused("provision", provisionIt) // what was half taken down is not provisioned again
	refused("activate", activateIt)

	do("retry", retryIt)
	want(lifecycle.EnvironmentDecommissioning, "")
	do("finish", finishIt)
	want(lifecycle.EnvironmentDecommissioned, "")
	for what, f := range map[string]func(*dbgen.Queries) error{"activate": activateIt, "provision": provisionIt,
		"decommission": decommissionIt, "fail": failIt, "retry": retryIt, "finish": finishIt} {
		refused(what, f)
	}

	// A provisioning that failed is retried as a provisioning, whatever its reason says.
	do("put back to provisioning by hand", func(q *dbgen.Queries) error {
		_, err := pool.Exec(ctx, `UPDATE environments SET status = 'provisioning', failed_transition = NULL WHERE id = $1`, id)
		return err
	})
	do("fail", failIt)
	want(lifecycle.EnvironmentFailed, provision)
	do("retry", retryIt)
	want(lifecycle.EnvironmentProvisioning, "")
	do("activate", activateIt)
	want(lifecycle.EnvironmentActive, "")
}

// TestStatus_MovesFollowTheLifecycle pins the allowed moves to the lifecycle of DESIGN.md, plus
// a provisioning stopped by a decommissioning.
func TestStatus_MovesFollowTheLifecycle(t *testing.T) {
	all := []lifecycle.EnvironmentStatus{lifecycle.EnvironmentPlanned, lifecycle.EnvironmentProvisioning, lifecycle.EnvironmentActive, lifecycle.EnvironmentFailed, lifecycle.EnvironmentDecommissioning, lifecycle.EnvironmentDecommissioned}
	allowed := map[[2]lifecycle.EnvironmentStatus]bool{
		{lifecycle.EnvironmentPlanned, lifecycle.EnvironmentProvisioning}: true, {lifecycle.EnvironmentPlanned, lifecycle.EnvironmentActive}: true,
		{lifecycle.EnvironmentProvisioning, lifecycle.EnvironmentActive}: true, {lifecycle.EnvironmentProvisioning, lifecycle.EnvironmentFailed}: true, {lifecycle.EnvironmentProvisioning, lifecycle.EnvironmentDecommissioning}: true,
		{lifecycle.EnvironmentActive, lifecycle.EnvironmentDecommissioning}: true,
		{lifecycle.EnvironmentFailed, lifecycle.EnvironmentProvisioning}:    true, {lifecycle.EnvironmentFailed, lifecycle.EnvironmentDecommissioning}: true,
		{lifecycle.EnvironmentDecommissioning, lifecycle.EnvironmentDecommissioned}: true, {lifecycle.EnvironmentDecommissioning, lifecycle.EnvironmentFailed}: true,
	}
	for _, from := range all {
		for _, to := range all {
			if got := lifecycle.Environments.Allows(from, to); got != allowed[[2]lifecycle.EnvironmentStatus{from, to}] {
				t.Errorf("%s → %s allowed: %v", from, to, got)
			}
		}
	}
}
