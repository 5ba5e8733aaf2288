package server_test

import (
	"context"
	"testing"

	"nimbus/app/environment"
	"nimbus/app/problem"
)

var environmentCases = map[string]func(t *testing.T, w *world){
	"environment.Service.Create": func(t *testing.T, w *world) {
		ctx := context.Background()
		envs := environment.NewService(w.pool)
		_, err := envs.Create(ctx, w.adminB, w.a.ID, "dev")
		if problem.FieldOf(err) != "tenant_id" {
			t.Fatalf("creating in another tenant: %v", err)
		}
		_, err = envs.Create(ctx, w.userA, w.a.ID, "dev")
		wantErr(t, err, problem.ErrForbidden)
		_, err = envs.Create(ctx, w.adminA, w.a.ID, "dev")
		must(t, err)
		if _, err = envs.Create(ctx, w.adminA, w.a.ID, "DEV"); problem.FieldOf(err) != "name" {
			t.Fatalf("a second dev: %v", err)
		}
	},
	"environment.Service.Get": func(t *testing.T, w *world) {
		ctx := context.Background()
		envs := environment.NewService(w.pool)
		e, err := envs.Create(ctx, w.adminA, w.a.ID, "dev")
		must(t, err)
		_, err = envs.Get(ctx, w.adminB, e.ID)
		wantErr(t, err, problem.ErrNotFound)
		_, err = envs.Get(ctx, w.readerA, e.ID)
		must(t, err)
	},
	"environment.Service.List": func(t *testing.T, w *world) {
		ctx := context.Background()
		envs := environment.NewService(w.pool)
		_, err := envs.Create(ctx, w.adminA, w.a.ID, "dev")
		must(t, err)
		got, err := envs.List(ctx, w.adminB)
		must(t, err)
		if len(got) != 0 {
			t.Fatalf("tenant admin of B lists A's environments: %v", got)
		}
		got, err = envs.List(ctx, w.readerA)
		must(t, err)
		if len(got) != 1 {
			t.Fatalf("reader of A lists %d environments, want 1", len(got))
		}
	},
}
