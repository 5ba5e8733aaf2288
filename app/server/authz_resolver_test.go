package server_test

import (
	"context"
	"encoding/json"
	"testing"

	"nimbus/app/environment"
	"nimbus/app/ipam"
	"nimbus/app/problem"
	"nimbus/app/resolver"
)

// devPool makes an environment of tenant A with a pool, as the provider admin.
func devPool(t *testing.T, w *world) (environment.Environment, ipam.Pool) {
	t.Helper()
	env, err := environment.NewService(w.pool).Create(context.Background(), w.adminA, w.a.ID, "dev")
	must(t, err)
	p, err := ipam.NewService(w.pool).CreatePool(context.Background(), w.admin, ipam.NewPool{Name: "net", Prefix: "10.1.0.0/24", EnvironmentID: env.ID})
	must(t, err)
	return env, p
}

var resolverCases = map[string]func(t *testing.T, w *world){
	"ipam.Service.CreatePool": func(t *testing.T, w *world) {
		env, _ := devPool(t, w)
		svc := ipam.NewService(w.pool)
		in := ipam.NewPool{Name: "more", Prefix: "10.2.0.0/24", EnvironmentID: env.ID}
		_, err := svc.CreatePool(context.Background(), w.adminB, in)
		if problem.FieldOf(err) != "environment_id" {
			t.Fatalf("a pool in another tenant's environment: %v", err)
		}
		_, err = svc.CreatePool(context.Background(), w.adminA, in)
		wantErr(t, err, problem.ErrForbidden) // resolvers are the provider's to configure
	},
	"ipam.Service.Get": func(t *testing.T, w *world) {
		_, p := devPool(t, w)
		_, err := ipam.NewService(w.pool).Get(context.Background(), w.adminB, p.ID)
		wantErr(t, err, problem.ErrNotFound)
		got, err := ipam.NewService(w.pool).Get(context.Background(), w.readerA, p.ID)
		must(t, err)
		if got.Gateway.String() != "10.1.0.1" {
			t.Fatalf("pool %+v", got)
		}
	},
	"ipam.Service.List": func(t *testing.T, w *world) {
		devPool(t, w)
		got, err := ipam.NewService(w.pool).List(context.Background(), w.adminB, ipam.Filter{})
		must(t, err)
		if len(got) != 0 {
			t.Fatalf("B lists A's pools: %v", got)
		}
		if got, err = ipam.NewService(w.pool).List(context.Background(), w.readerA, ipam.Filter{}); err != nil || len(got) != 1 {
			t.Fatalf("A's reader lists %v (%v)", got, err)
		}
	},
	"resolver.Service.Configs": func(t *testing.T, w *world) {
		env, _ := devPool(t, w)
		_, err := resolver.NewService(w.pool).Configs(context.Background(), w.adminB, env.ID)
		wantErr(t, err, problem.ErrNotFound)
		_, err = resolver.NewService(w.pool).Configs(context.Background(), w.readerA, env.ID)
		must(t, err)
	},
	"resolver.Service.SetConfig": func(t *testing.T, w *world) {
		env, p := devPool(t, w)
		config := json.RawMessage(`{"pool_id": "` + p.ID.String() + `"}`)
		svc := resolver.NewService(w.pool)
		_, err := svc.SetConfig(context.Background(), w.adminB, env.ID, "ipam", config)
		wantErr(t, err, problem.ErrNotFound)
		_, err = svc.SetConfig(context.Background(), w.adminA, env.ID, "ipam", config)
		wantErr(t, err, problem.ErrForbidden)
		_, err = svc.SetConfig(context.Background(), w.admin, env.ID, "ipam", config)
		must(t, err)
	},
	"resolver.Service.NextName": func(t *testing.T, w *world) {
		env, _ := devPool(t, w)
		svc := resolver.NewService(w.pool)
		_, err := svc.NextName(context.Background(), w.adminB, env.ID, "{env}-{seq}")
		wantErr(t, err, problem.ErrNotFound)
		name, err := svc.NextName(context.Background(), w.readerA, env.ID, "{tenant}-{env}-{seq:03d}")
		must(t, err)
		if name != "tenant-a-dev-001" {
			t.Fatalf("next name %q", name)
		}
	},
	"resolver.Service.Images": func(t *testing.T, w *world) {
		images, err := resolver.NewService(w.pool).Images(context.Background(), w.readerA)
		must(t, err)
		if len(images) < 3 {
			t.Fatalf("the seeded catalog: %v", images)
		}
	},
	"resolver.Service.AddImage": func(t *testing.T, w *world) {
		svc := resolver.NewService(w.pool)
		in := resolver.Image{Provider: "simcloud", OSFamily: "alpine", OSVersion: "3.20", ImageID: "alpine-3.20"}
		_, err := svc.AddImage(context.Background(), w.adminA, in)
		wantErr(t, err, problem.ErrForbidden) // the catalog is the provider's
		_, err = svc.AddImage(context.Background(), w.admin, in)
		must(t, err)
		_, err = svc.AddImage(context.Background(), w.admin, in)
		if problem.FieldOf(err) != "os_version" {
			t.Fatalf("the same image twice: %v", err)
		}
		in.Provider = "nowhere"
		if _, err = svc.AddImage(context.Background(), w.admin, in); problem.FieldOf(err) != "provider" {
			t.Fatalf("an unknown provider: %v", err)
		}
	},
	"resolver.Service.DeleteImage": func(t *testing.T, w *world) {
		svc := resolver.NewService(w.pool)
		img, err := svc.AddImage(context.Background(), w.admin, resolver.Image{Provider: "simcloud", OSFamily: "alpine", OSVersion: "3.21", ImageID: "alpine-3.21"})
		must(t, err)
		wantErr(t, svc.DeleteImage(context.Background(), w.adminA, img.ID), problem.ErrForbidden)
		must(t, svc.DeleteImage(context.Background(), w.admin, img.ID))
		wantErr(t, svc.DeleteImage(context.Background(), w.admin, img.ID), problem.ErrNotFound)
	},
}
