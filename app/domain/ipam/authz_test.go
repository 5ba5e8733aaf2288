package ipam_test

import (
	"context"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/domain/ipam"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
)

var resolverCases = map[string]apptest.AuthzCase{
	"ipam.Service.Scopes": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			dev := w.Dev(t)
			_, envs, err := w.Ipam.Scopes(context.Background(), p)
			return apptest.Shown(envs, err, func(s ipam.Scope) bool { return s.Value == "environment:"+dev.ID.String() })
		},
	},
	"ipam.Service.CreatePool": {
		// Resolvers are the provider's to configure.
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: apptest.Invalid("environment_id")}, {Who: apptest.AdminA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := w.Ipam.CreatePool(context.Background(), p, ipam.NewPool{Name: "more", Prefix: "10.2.0.0/24", EnvironmentID: w.Dev(t).ID})
			return err
		},
	},
	"ipam.Service.Get": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ReaderA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			got, err := w.Ipam.Get(context.Background(), p, w.NetA(t).ID)
			if err == nil && got.Gateway.String() != "10.1.0.1" {
				t.Errorf("pool %+v", got)
			}
			return err
		},
	},
	"ipam.Service.List": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: apptest.ErrHidden}},
		Served:  []apptest.Actor{apptest.ReaderA, apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			net := w.NetA(t)
			got, err := w.Ipam.List(context.Background(), p, ipam.Filter{})
			for _, pool := range got {
				if pool.TenantID != nil && !p.Can(access.ResolverConfigRead, *pool.TenantID) {
					t.Errorf("%s lists pool %s of another tenant", p.Email, pool.Name)
				}
			}
			return apptest.Shown(got, err, func(pool ipam.Pool) bool { return pool.ID == net.ID })
		},
		Then: func(t *testing.T, w *apptest.World) {
			got, err := w.Ipam.List(context.Background(), w.AdminB, ipam.Filter{})
			apptest.Must(t, err)
			if len(got) != 0 {
				t.Fatalf("B lists A's pools: %v", got)
			}
		},
	},
}

// TestAuthz_Methods runs the authorization case of each of the package's data-access methods.
func TestAuthz_Methods(t *testing.T) { apptest.RunAuthz(t, resolverCases) }
