package resolver_test

import (
	"context"
	"encoding/json"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/domain/ipam"
	"nimbus/app/domain/resolver"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/orchestration/environment"
)

var zoneCases = map[string]apptest.AuthzCase{
	"resolver.Service.ZoneConfigs": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := w.Resolvers.ZoneConfigs(context.Background(), p, w.Zone(t).Zone.ID)
			return err
		},
	},
	"resolver.Service.SetZoneConfig": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			cfg := json.RawMessage(`{"pattern": "{env}-{seq}"}`)
			_, err := w.Resolvers.SetZoneConfig(context.Background(), p, w.Zone(t).Zone.ID, "naming", cfg)
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			// The zone's environments inherit it.
			configs, err := w.Resolvers.Configs(context.Background(), w.ReaderA, w.Zoned(t))
			apptest.Must(t, err)
			if len(configs) != 1 || !configs[0].Inherited {
				t.Fatalf("the environment's configurations: %+v", configs)
			}
		},
	},
	"resolver.Service.ClearConfig": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.AdminA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			env := apptest.Fixture(w, "named", func() environment.Environment {
				env := w.Dev(t)
				_, err := w.Resolvers.SetConfig(context.Background(), w.Admin, env.ID, "naming", json.RawMessage(`{"pattern": "{env}-{seq}"}`))
				apptest.Must(t, err)
				return env
			})
			return w.Resolvers.ClearConfig(context.Background(), p, env.ID, "naming")
		},
		Then: func(t *testing.T, w *apptest.World) {
			configs, err := w.Resolvers.Configs(context.Background(), w.Admin, w.Dev(t).ID)
			apptest.Must(t, err)
			if len(configs) != 0 {
				t.Fatalf("still configured: %+v", configs)
			}
		},
	},
	"resolver.Service.NextZoneName": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			name, err := w.Resolvers.NextZoneName(context.Background(), p, w.Zone(t).Zone.ID, "{tenant}-{env}-{seq:02d}")
			if err == nil && name != "tenant-env-01" {
				t.Errorf("next name %q", name)
			}
			return err
		},
	},
}

var resolverCases = map[string]apptest.AuthzCase{
	"resolver.Service.EnvironmentPools": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ReaderA, apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			net := w.NetA(t)
			got, err := w.Resolvers.EnvironmentPools(context.Background(), p, w.Dev(t).ID)
			return apptest.Shown(got, err, func(c resolver.PoolChoice) bool { return c.ID == net.ID && !c.Shared })
		},
	},
	"resolver.Service.ZonePools": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			z := w.DraftZone(t).Zone
			net := apptest.Fixture(w, "zoneNet", func() ipam.Pool {
				pool, err := w.Ipam.CreatePool(context.Background(), w.Admin, ipam.NewPool{Name: "shared", Prefix: "10.9.0.0/24", LandingZoneID: z.ID})
				apptest.Must(t, err)
				return pool
			})
			got, err := w.Resolvers.ZonePools(context.Background(), p, z.ID)
			return apptest.Shown(got, err, func(c resolver.PoolChoice) bool { return c.ID == net.ID })
		},
	},
	"resolver.Service.ImageProviders": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			got, err := w.Resolvers.ImageProviders(context.Background(), p)
			return apptest.Shown(got, err, func(name string) bool { return name == "simcloud" })
		},
	},
	"resolver.Service.IssuedNames": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ReaderA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			got, err := w.Resolvers.IssuedNames(context.Background(), p, w.Dev(t).ID)
			if err == nil && len(got) != 0 {
				t.Errorf("names issued where nothing was deployed: %+v", got)
			}
			return err
		},
	},
	"resolver.Service.Configs": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ReaderA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := w.Resolvers.Configs(context.Background(), p, w.Dev(t).ID)
			return err
		},
	},
	"resolver.Service.SetConfig": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.AdminA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			config := json.RawMessage(`{"pool_id": "` + w.NetA(t).ID.String() + `"}`)
			_, err := w.Resolvers.SetConfig(context.Background(), p, w.Dev(t).ID, "ipam", config)
			return err
		},
	},
	"resolver.Service.MaySetConfig": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.AdminA, Want: problem.ErrForbidden}, {Who: apptest.ReaderA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			return w.Resolvers.MaySetConfig(context.Background(), p, w.Dev(t).ID)
		},
	},
	"resolver.Service.NextName": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ReaderA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			name, err := w.Resolvers.NextName(context.Background(), p, w.Dev(t).ID, "{tenant}-{env}-{seq:03d}")
			if err == nil && name != "tenant-a-dev-001" {
				t.Errorf("next name %q", name)
			}
			return err
		},
	},
	"resolver.Service.Images": {
		Open:   "the image catalog names no tenant: anyone signed in may read it",
		Served: []apptest.Actor{apptest.ReaderA, apptest.Stranger},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			images, err := w.Resolvers.Images(context.Background(), p)
			if err == nil && len(images) < 3 {
				t.Errorf("the seeded catalog: %v", images)
			}
			return err
		},
	},
	"resolver.Service.AddImage": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}}, // the catalog is the provider's
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := w.Resolvers.AddImage(context.Background(), p, apptest.Alpine("3.20"))
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			_, err := w.Resolvers.AddImage(context.Background(), w.Admin, apptest.Alpine("3.20"))
			apptest.WantField(t, err, "os_version") // the same image twice
			in := apptest.Alpine("3.20")
			in.Provider = "nowhere"
			_, err = w.Resolvers.AddImage(context.Background(), w.Admin, in)
			apptest.WantField(t, err, "provider")
		},
	},
	"resolver.Service.DeleteImage": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			return w.Resolvers.DeleteImage(context.Background(), p, w.Image(t).ID)
		},
		Then: func(t *testing.T, w *apptest.World) {
			apptest.WantErr(t, w.Resolvers.DeleteImage(context.Background(), w.Admin, w.Image(t).ID), problem.ErrNotFound)
		},
	},
}

// TestAuthz_Methods runs the authorization case of each of the package's data-access methods.
func TestAuthz_Methods(t *testing.T) { apptest.RunAuthz(t, zoneCases, resolverCases) }
