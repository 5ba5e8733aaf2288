package provision_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/apptest"
	"nimbus/app/domain/component"
	"nimbus/app/domain/tenant"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
)

var provisionCases = map[string]apptest.AuthzCase{
	"provision.Service.CreateFactory": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}, {Who: apptest.UserA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			if _, err := component.EnsureBuiltins(context.Background(), w.Components); err != nil {
				t.Fatal(err)
			}
			_, err := w.Provisions.CreateFactory(context.Background(), p)
			return err
		},
	},
	"provision.Service.SetFactory": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrNotFound}, {Who: apptest.UserA, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			return w.Provisions.SetFactory(context.Background(), p, w.FactoryZone(t), nil)
		},
	},
	"provision.Service.Setting": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrNotFound}, {Who: apptest.UserA, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			s, err := w.Provisions.Setting(context.Background(), p, w.FactoryZone(t))
			if err == nil && s.Factory == nil {
				t.Error("the zone's factory is missing")
			}
			return err
		},
	},
	"provision.Service.Zones": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}, {Who: apptest.UserA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			w.FactoryZone(t)
			zones, err := w.Provisions.Zones(context.Background(), p)
			if err == nil && (len(zones) != 1 || len(zones[0].Tiers) != 3) {
				t.Errorf("zones with a factory: %+v", zones)
			}
			return err
		},
	},
	"provision.Service.Provision": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}, {Who: apptest.UserA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := w.Provisions.Provision(context.Background(), p, w.A.ID, tenant.NamespaceRequest{LandingZoneID: w.FactoryZone(t)})
			return err
		},
	},
	"provision.Service.ProvisionTx": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}, {Who: apptest.UserA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			ctx, zone := context.Background(), w.FactoryZone(t)
			var id uuid.UUID
			err := w.InTx(func(tx pgx.Tx) (err error) {
				id, err = w.Provisions.ProvisionTx(ctx, tx, p, w.A.ID, tenant.NamespaceRequest{LandingZoneID: zone})
				return err
			})
			if err != nil {
				return err
			}
			n, err := w.Provisions.Get(ctx, p, id)
			apptest.Must(t, err)
			if n.Namespace != "tenant-a" {
				t.Errorf("tenant A's namespace: %+v", n)
			}
			return nil
		},
	},
	"provision.Service.Get": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrNotFound}, {Who: apptest.UserA, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			n, err := w.Provisions.Get(context.Background(), p, w.TenantNamespace(t))
			if err == nil && n.Namespace != "tenant-a" {
				t.Errorf("tenant A's namespace: %+v", n)
			}
			return err
		},
	},
	"provision.Service.List": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrNotFound}, {Who: apptest.UserA, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			w.TenantNamespace(t)
			all, err := w.Provisions.List(context.Background(), p, w.A.ID)
			if err == nil && len(all) != 1 {
				t.Errorf("tenant A's namespaces: %+v", all)
			}
			return err
		},
	},
	"provision.Service.Decommission": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrNotFound}, {Who: apptest.UserA, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := w.Provisions.Decommission(context.Background(), p, w.TenantNamespace(t))
			return err
		},
	},
	"provision.Service.DecommissionTenant": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrNotFound}, {Who: apptest.UserA, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			w.TenantNamespace(t)
			started, err := w.Provisions.DecommissionTenant(context.Background(), p, w.A.ID)
			if err == nil && len(started) != 1 {
				t.Errorf("decommissioning started on %+v", started)
			}
			return err
		},
	},
}

// TestAuthz_Methods runs the authorization case of each of the package's data-access methods.
func TestAuthz_Methods(t *testing.T) { apptest.RunAuthz(t, provisionCases) }
