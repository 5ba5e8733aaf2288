package server_test

import (
	"context"
	"encoding/json"
	"testing"

	"nimbus/app/access"
	"nimbus/app/ipam"
	"nimbus/app/problem"
	"nimbus/app/resolver"
)

// netA is a pool of tenant A's environment dev, made by the provider admin.
func (w *world) netA(t *testing.T) ipam.Pool {
	return fixture(w, "netA", func() ipam.Pool {
		p, err := w.ipam.CreatePool(context.Background(), w.admin, ipam.NewPool{Name: "net", Prefix: "10.1.0.0/24", EnvironmentID: w.dev(t).ID})
		must(t, err)
		return p
	})
}

var resolverCases = map[string]authzCase{
	"ipam.Service.Scopes": {
		refused: []refusal{{adminA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			dev := w.dev(t)
			_, envs, err := w.ipam.Scopes(context.Background(), p)
			return shown(envs, err, func(s ipam.Scope) bool { return s.Value == "environment:"+dev.ID.String() })
		},
	},
	"resolver.Service.EnvironmentPools": {
		refused: []refusal{{adminB, problem.ErrNotFound}},
		served:  []actor{readerA, providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			net := w.netA(t)
			got, err := w.resolvers.EnvironmentPools(context.Background(), p, w.dev(t).ID)
			return shown(got, err, func(c resolver.PoolChoice) bool { return c.ID == net.ID && !c.Shared })
		},
	},
	"resolver.Service.ZonePools": {
		refused: []refusal{{adminA, problem.ErrNotFound}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			z := w.draftZone(t).zone
			net := fixture(w, "zoneNet", func() ipam.Pool {
				pool, err := w.ipam.CreatePool(context.Background(), w.admin, ipam.NewPool{Name: "shared", Prefix: "10.9.0.0/24", LandingZoneID: z.ID})
				must(t, err)
				return pool
			})
			got, err := w.resolvers.ZonePools(context.Background(), p, z.ID)
			return shown(got, err, func(c resolver.PoolChoice) bool { return c.ID == net.ID })
		},
	},
	"resolver.Service.ImageProviders": {
		refused: []refusal{{adminA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			got, err := w.resolvers.ImageProviders(context.Background(), p)
			return shown(got, err, func(name string) bool { return name == "simcloud" })
		},
	},
	"resolver.Service.IssuedNames": {
		refused: []refusal{{adminB, problem.ErrNotFound}},
		served:  []actor{readerA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			got, err := w.resolvers.IssuedNames(context.Background(), p, w.dev(t).ID)
			if err == nil && len(got) != 0 {
				t.Errorf("names issued where nothing was deployed: %+v", got)
			}
			return err
		},
	},
	"ipam.Service.CreatePool": {
		// Resolvers are the provider's to configure.
		refused: []refusal{{adminB, invalid("environment_id")}, {adminA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			_, err := w.ipam.CreatePool(context.Background(), p, ipam.NewPool{Name: "more", Prefix: "10.2.0.0/24", EnvironmentID: w.dev(t).ID})
			return err
		},
	},
	"ipam.Service.Get": {
		refused: []refusal{{adminB, problem.ErrNotFound}},
		served:  []actor{readerA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			got, err := w.ipam.Get(context.Background(), p, w.netA(t).ID)
			if err == nil && got.Gateway.String() != "10.1.0.1" {
				t.Errorf("pool %+v", got)
			}
			return err
		},
	},
	"ipam.Service.List": {
		refused: []refusal{{adminB, errHidden}},
		served:  []actor{readerA, providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			net := w.netA(t)
			got, err := w.ipam.List(context.Background(), p, ipam.Filter{})
			for _, pool := range got {
				if pool.TenantID != nil && !p.Can(access.ResolverConfigRead, *pool.TenantID) {
					t.Errorf("%s lists pool %s of another tenant", p.Email, pool.Name)
				}
			}
			return shown(got, err, func(pool ipam.Pool) bool { return pool.ID == net.ID })
		},
		then: func(t *testing.T, w *world) {
			got, err := w.ipam.List(context.Background(), w.adminB, ipam.Filter{})
			must(t, err)
			if len(got) != 0 {
				t.Fatalf("B lists A's pools: %v", got)
			}
		},
	},
	"resolver.Service.Configs": {
		refused: []refusal{{adminB, problem.ErrNotFound}},
		served:  []actor{readerA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			_, err := w.resolvers.Configs(context.Background(), p, w.dev(t).ID)
			return err
		},
	},
	"resolver.Service.SetConfig": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {adminA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			config := json.RawMessage(`{"pool_id": "` + w.netA(t).ID.String() + `"}`)
			_, err := w.resolvers.SetConfig(context.Background(), p, w.dev(t).ID, "ipam", config)
			return err
		},
	},
	"resolver.Service.MaySetConfig": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {adminA, problem.ErrForbidden}, {readerA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			return w.resolvers.MaySetConfig(context.Background(), p, w.dev(t).ID)
		},
	},
	"resolver.Service.NextName": {
		refused: []refusal{{adminB, problem.ErrNotFound}},
		served:  []actor{readerA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			name, err := w.resolvers.NextName(context.Background(), p, w.dev(t).ID, "{tenant}-{env}-{seq:03d}")
			if err == nil && name != "tenant-a-dev-001" {
				t.Errorf("next name %q", name)
			}
			return err
		},
	},
	"resolver.Service.Images": {
		open:   "the image catalog names no tenant: anyone signed in may read it",
		served: []actor{readerA, stranger},
		call: func(t *testing.T, w *world, p access.Principal) error {
			images, err := w.resolvers.Images(context.Background(), p)
			if err == nil && len(images) < 3 {
				t.Errorf("the seeded catalog: %v", images)
			}
			return err
		},
	},
	"resolver.Service.AddImage": {
		refused: []refusal{{adminA, problem.ErrForbidden}}, // the catalog is the provider's
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			_, err := w.resolvers.AddImage(context.Background(), p, alpine("3.20"))
			return err
		},
		then: func(t *testing.T, w *world) {
			_, err := w.resolvers.AddImage(context.Background(), w.admin, alpine("3.20"))
			wantField(t, err, "os_version") // the same image twice
			in := alpine("3.20")
			in.Provider = "nowhere"
			_, err = w.resolvers.AddImage(context.Background(), w.admin, in)
			wantField(t, err, "provider")
		},
	},
	"resolver.Service.DeleteImage": {
		refused: []refusal{{adminA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			return w.resolvers.DeleteImage(context.Background(), p, w.image(t).ID)
		},
		then: func(t *testing.T, w *world) {
			wantErr(t, w.resolvers.DeleteImage(context.Background(), w.admin, w.image(t).ID), problem.ErrNotFound)
		},
	},
}

// image is an entry the provider admin added to the image catalog.
func (w *world) image(t *testing.T) resolver.Image {
	return fixture(w, "image", func() resolver.Image {
		img, err := w.resolvers.AddImage(context.Background(), w.admin, alpine("3.21"))
		must(t, err)
		return img
	})
}

// alpine is an image catalog entry of the simulated cloud.
func alpine(version string) resolver.Image {
	return resolver.Image{Provider: "simcloud", OSFamily: "alpine", OSVersion: version, ImageID: "alpine-" + version}
}
