package deploy

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/netip"
	"reflect"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/domain/resolver"
	"nimbus/app/kernel/secrets"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/db/dbtest"
)

// A server that dies after the resolve step committed but before its checkpoint said so runs
// the step again: it gets what it was handed the first time, not a second address, and
// undoing the operation gives it back.
func TestResolve_RunTwiceHandsOutOnceAndUndoGivesBack(t *testing.T) {
	pool := dbtest.Pool(t)
	ctx := context.Background()
	d := dbtest.NewDeployment(t, pool)
	q := db.Queries(pool)
	if _, err := pool.Exec(ctx, `UPDATE component_versions SET input_schema = $2, resolver_bindings = $3 WHERE component_id = $1`,
		d.ComponentID, `{"type": "object", "properties": {"ip_address": {"type": "string"}, "gateway": {"type": "string"}, "cores": {"type": "integer"}}}`,
		`{"ip_address": "ipam", "gateway": "ipam.gateway"}`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE operations SET target_version = 1, parameters = '{"cores": 2}' WHERE id = $1`, d.OperationID); err != nil {
		t.Fatal(err)
	}
	p, err := q.CreatePool(ctx, dbgen.CreatePoolParams{TenantID: uuid.NullUUID{UUID: d.TenantID, Valid: true},
		EnvironmentID: uuid.NullUUID{UUID: d.EnvironmentID, Valid: true}, Name: "p",
		Prefix: netip.MustParsePrefix("10.3.0.0/24"), Reserved: []netip.Prefix{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.SetEnvironmentResolverConfig(ctx, dbgen.SetEnvironmentResolverConfigParams{EnvironmentID: uuid.NullUUID{UUID: d.EnvironmentID, Valid: true}, Type: "ipam",
		Config: []byte(`{"pool_id": "` + p.ID.String() + `"}`)}); err != nil {
		t.Fatal(err)
	}
	keys, err := secrets.Load(t.TempDir(), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	w := NewWorker(pool, nil, keys, nil, slog.New(slog.DiscardHandler), 0)
	dep, err := q.GetDeployment(ctx, d.DeploymentID)
	if err != nil {
		t.Fatal(err)
	}
	op, err := q.GetOperation(ctx, d.OperationID)
	if err != nil {
		t.Fatal(err)
	}
	ver, err := versionOf(ctx, q, dep, op.TargetVersion.Int32)
	if err != nil {
		t.Fatal(err)
	}
	var filled dbgen.Operation
	for range 2 {
		if _, filled, err = w.resolve(ctx, dep, op, ver); err != nil {
			t.Fatal(err)
		}
	}
	allocations, err := q.PoolAllocations(ctx, p.ID)
	if err != nil || len(allocations) != 1 {
		t.Fatalf("allocations after two runs: %v (%v)", allocations, err)
	}
	op, _ = q.GetOperation(ctx, d.OperationID)
	var params map[string]any
	_ = json.Unmarshal(op.Parameters, &params)
	if params["ip_address"] != "10.3.0.2" || params["gateway"] != "10.3.0.1" || params["cores"] != 2.0 {
		t.Fatalf("the operation's parameters: %v", params)
	}
	// The run goes on with the operation as resolve returned it, without reading it again.
	var returned map[string]any
	_ = json.Unmarshal(filled.Parameters, &returned)
	if !reflect.DeepEqual(returned, params) {
		t.Fatalf("resolve returned parameters %s, and stored %s", filled.Parameters, op.Parameters)
	}
	if err := db.Tx(ctx, pool, func(q *dbgen.Queries) error { return resolver.ReleaseOperation(ctx, q, op.ID) }); err != nil {
		t.Fatal(err)
	}
	if allocations, _ := q.PoolAllocations(ctx, p.ID); len(allocations) != 0 {
		t.Fatalf("allocations after the undo: %v", allocations)
	}
}

// Where no resolver is configured the step hands nothing out and leaves the operation's
// parameters as the request wrote them: no write, so no commit to wait for.
func TestResolve_NothingToHandOutWritesNothing(t *testing.T) {
	pool := dbtest.Pool(t)
	ctx := context.Background()
	d := dbtest.NewDeployment(t, pool)
	q := db.Queries(pool)
	if _, err := pool.Exec(ctx, `UPDATE component_versions SET input_schema = $2, resolver_bindings = $3 WHERE component_id = $1`,
		d.ComponentID, `{"type": "object", "properties": {"ip_address": {"type": "string"}, "cores": {"type": "integer"}}}`,
		`{"ip_address": "ipam"}`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE operations SET target_version = 1, parameters = '{"cores": 2}' WHERE id = $1`, d.OperationID); err != nil {
		t.Fatal(err)
	}
	keys, err := secrets.Load(t.TempDir(), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	w := NewWorker(pool, nil, keys, nil, slog.New(slog.DiscardHandler), 0)
	dep, err := q.GetDeployment(ctx, d.DeploymentID)
	if err != nil {
		t.Fatal(err)
	}
	op, err := q.GetOperation(ctx, d.OperationID)
	if err != nil {
		t.Fatal(err)
	}
	version := func() (v string) {
		if err := pool.QueryRow(ctx, `SELECT xmin::text FROM operations WHERE id = $1`, op.ID).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	ver, err := versionOf(ctx, q, dep, op.TargetVersion.Int32)
	if err != nil {
		t.Fatal(err)
	}
	before := version()
	got, _, err := w.resolve(ctx, dep, op, ver)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "{}" {
		t.Fatalf("result %s, want nothing handed out", got)
	}
	if after := version(); after != before {
		t.Fatalf("the operation was written again (row version %s, then %s)", before, after)
	}
}
