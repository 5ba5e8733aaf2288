package server_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/access"
	"nimbus/app/component"
	"nimbus/app/problem"
	"nimbus/app/provision"
)

// provisions is the world's provisioning service; no worker deploys its factories.
func (w *world) provisions(t *testing.T) *provision.Service {
	return fixture(w, "provisions", func() *provision.Service {
		return provision.NewService(w.pool, w.keys, w.stacks(), w.instances(t))
	})
}

// factoryZone publishes the Kubernetes zone with its cluster and makes the built-in tenant
// factory, published, its factory.
func (w *world) factoryZone(t *testing.T) uuid.UUID {
	return fixture(w, "factoryZone", func() uuid.UUID {
		ctx := context.Background()
		w.zoneCluster(t)
		if _, err := w.zones.Publish(ctx, w.admin, w.kubeZone(t)); err != nil {
			t.Fatal(err)
		}
		if _, err := component.EnsureBuiltins(ctx, w.components); err != nil {
			t.Fatal(err)
		}
		st, err := w.provisions(t).CreateFactory(ctx, w.admin)
		must(t, err)
		if _, err := w.resolvers.SetZoneConfig(ctx, w.admin, w.kubeZone(t), "secret_provisioner", json.RawMessage(`{"length": 32}`)); err != nil {
			t.Fatal(err)
		}
		if _, err := w.stacks().Publish(ctx, w.admin, st.ID, "The factory."); err != nil {
			t.Fatal(err)
		}
		must(t, w.provisions(t).SetFactory(ctx, w.admin, w.kubeZone(t), &st.ID))
		return w.kubeZone(t)
	})
}

// tenantNamespace provisions tenant A on the factory zone.
func (w *world) tenantNamespace(t *testing.T) uuid.UUID {
	return fixture(w, "tenantNamespace", func() uuid.UUID {
		n, err := w.provisions(t).Provision(context.Background(), w.admin, w.a.ID, provision.Request{LandingZoneID: w.factoryZone(t), Tier: "small"})
		must(t, err)
		return n.ID
	})
}

var provisionCases = map[string]authzCase{
	"provision.Service.CreateFactory": {
		refused: []refusal{{adminA, problem.ErrForbidden}, {userA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			if _, err := component.EnsureBuiltins(context.Background(), w.components); err != nil {
				t.Fatal(err)
			}
			_, err := w.provisions(t).CreateFactory(context.Background(), p)
			return err
		},
	},
	"provision.Service.SetFactory": {
		refused: []refusal{{adminA, problem.ErrNotFound}, {userA, problem.ErrNotFound}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			return w.provisions(t).SetFactory(context.Background(), p, w.factoryZone(t), nil)
		},
	},
	"provision.Service.Setting": {
		refused: []refusal{{adminA, problem.ErrNotFound}, {userA, problem.ErrNotFound}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			s, err := w.provisions(t).Setting(context.Background(), p, w.factoryZone(t))
			if err == nil && s.Factory == nil {
				t.Error("the zone's factory is missing")
			}
			return err
		},
	},
	"provision.Service.Zones": {
		refused: []refusal{{adminA, problem.ErrForbidden}, {userA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			w.factoryZone(t)
			zones, err := w.provisions(t).Zones(context.Background(), p)
			if err == nil && (len(zones) != 1 || len(zones[0].Tiers) != 3) {
				t.Errorf("zones with a factory: %+v", zones)
			}
			return err
		},
	},
	"provision.Service.Provision": {
		refused: []refusal{{adminA, problem.ErrForbidden}, {userA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			_, err := w.provisions(t).Provision(context.Background(), p, w.a.ID, provision.Request{LandingZoneID: w.factoryZone(t)})
			return err
		},
	},
	"provision.Service.Get": {
		refused: []refusal{{adminA, problem.ErrNotFound}, {userA, problem.ErrNotFound}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			n, err := w.provisions(t).Get(context.Background(), p, w.tenantNamespace(t))
			if err == nil && n.Namespace != "tenant-a" {
				t.Errorf("tenant A's namespace: %+v", n)
			}
			return err
		},
	},
	"provision.Service.List": {
		refused: []refusal{{adminA, problem.ErrNotFound}, {userA, problem.ErrNotFound}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			w.tenantNamespace(t)
			all, err := w.provisions(t).List(context.Background(), p, w.a.ID)
			if err == nil && len(all) != 1 {
				t.Errorf("tenant A's namespaces: %+v", all)
			}
			return err
		},
	},
	"provision.Service.Decommission": {
		refused: []refusal{{adminA, problem.ErrNotFound}, {userA, problem.ErrNotFound}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			_, err := w.provisions(t).Decommission(context.Background(), p, w.tenantNamespace(t))
			return err
		},
	},
	"provision.Service.DecommissionTenant": {
		refused: []refusal{{adminA, problem.ErrNotFound}, {userA, problem.ErrNotFound}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			w.tenantNamespace(t)
			started, err := w.provisions(t).DecommissionTenant(context.Background(), p, w.a.ID)
			if err == nil && len(started) != 1 {
				t.Errorf("decommissioning started on %+v", started)
			}
			return err
		},
	},
	"tenant.Service.CreateProvisioned": {
		refused: []refusal{{adminA, problem.ErrForbidden}, {userA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			_, err := w.tenants.WithProvisioning(w.provisions(t)).CreateProvisioned(context.Background(), p, "Tenant C",
				&provision.Request{LandingZoneID: w.factoryZone(t), Tier: "medium"})
			return err
		},
	},
}
