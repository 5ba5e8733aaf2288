package apptest

import (
	"context"
	"testing"

	"github.com/google/uuid"
)

// Item is a configuration item of tenant A: the machine of the live deployment, at address
// 10.0.0.7 on the network n-1, as the end of its deploy records it.
func (w *World) Item(t *testing.T) uuid.UUID {
	return Fixture(w, "item", func() uuid.UUID {
		d := w.Live(t)
		var id uuid.UUID
		err := w.Pool.QueryRow(context.Background(), `INSERT INTO inventory_items (urn, type, provider_id, name, addresses,
			outputs, refs, search, tenant_id, environment_id, component_id, component_version, deployment_id, status,
			operation_id, created_operation_id)
			VALUES ('urn:pulumi:d::nimbus::simcloud:index:Machine::machine', 'simcloud:index:Machine', 'm-1', 'db-1', '{10.0.0.7}',
			'{"ip": "10.0.0.7", "networkId": "n-1"}', '{"networkId": "n-1"}', 'db-1 machine m-1 10.0.0.7', $1, $2, $3, 1, $4,
			'active', $5, $5) RETURNING id`, w.A.ID, d.EnvironmentID, d.ComponentID, d.ID, d.Op.ID).Scan(&id)
		Must(t, err)
		return id
	})
}

// Found is an item discovery found in the zone's cloud and no deployment claims, with status
// unmanaged or ignored: the machine m-found (provider), seen by provider admins alone.
func (w *World) Found(t *testing.T, status string) uuid.UUID {
	return Fixture(w, "found "+status, func() uuid.UUID {
		var id uuid.UUID
		err := w.Pool.QueryRow(context.Background(), `INSERT INTO inventory_items (type, provider_id, name, search, landing_zone_id, status)
			VALUES ('simcloud:index:Machine', 'm-found-' || $2, 'm-found-' || $2, 'm-found-' || $2, $1, $2) RETURNING id`,
			w.Zone(t).Zone.ID, status).Scan(&id)
		Must(t, err)
		return id
	})
}
