package inventory_test

import (
	"context"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/domain/inventory"
	"nimbus/app/orchestration/deploy"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// TestRecord_TakesOverWhatDiscoveryFoundAndRunsTwiceAsOnce records a deploy whose machine a
// poll had already found unmanaged, then an update, twice, as a record step run again after a
// crash would: the deployment takes the unmanaged item over, and the update changes it once.
func TestRecord_TakesOverWhatDiscoveryFoundAndRunsTwiceAsOnce(t *testing.T) {
	w := apptest.NewWorld(t)
	ctx := context.Background()
	live := w.Live(t)
	var stranger string
	err := w.Pool.QueryRow(ctx, `INSERT INTO inventory_items (type, provider_id, name, search, status)
		VALUES ('simcloud:index:Machine', 'm-9', 'm-9', 'm-9', 'unmanaged') RETURNING id`).Scan(&stranger)
	apptest.Must(t, err)
	machine := inventory.Resource{URN: "urn:pulumi:d::nimbus::simcloud:index:Machine::machine", Type: "simcloud:index:Machine",
		Name: "machine", Op: "create", ProviderID: "m-9", Outputs: map[string]any{"name": "db-1", "ip": "10.0.0.9"}}
	record := func(e inventory.Ending) {
		t.Helper()
		apptest.Must(t, db.Tx(ctx, w.Pool, func(q *dbgen.Queries) error { return inventory.Record(ctx, q, e) }))
	}
	record(inventory.Ending{Operation: live.Op.ID, Deployment: live.ID, Resources: []inventory.Resource{machine}})
	var status, deployment string
	var items int
	apptest.Must(t, w.Pool.QueryRow(ctx, `SELECT status, coalesce(deployment_id::text, ''), (SELECT count(*) FROM inventory_items)
		FROM inventory_items WHERE id = $1`, stranger).Scan(&status, &deployment, &items))
	if status != string(inventory.Active) || deployment != live.ID.String() || items != 1 {
		t.Fatalf("what discovery found is %s of deployment %q among %d items once the deployment records it, want the deployment's active one",
			status, deployment, items)
	}

	update, err := w.Deploys.Update(ctx, w.UserA, live.ID, deploy.Change{Parameters: map[string]any{"cores": 4.0}})
	apptest.Must(t, err)
	machine.Op = "update"
	for range 2 {
		record(inventory.Ending{Operation: update.ID, Deployment: live.ID, Resources: []inventory.Resource{machine}})
	}
	var changed int
	apptest.Must(t, w.Pool.QueryRow(ctx, `SELECT count(*) FROM event_log WHERE type = 'inventory.item.changed'`).Scan(&changed))
	if changed != 1 {
		t.Fatalf("an update recorded twice told of %d changes, want 1", changed)
	}
}
