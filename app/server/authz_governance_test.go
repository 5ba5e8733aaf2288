package server_test

import (
	"context"
	"testing"

	"nimbus/app/governance"
	"nimbus/app/problem"
)

var governanceCases = map[string]func(t *testing.T, w *world){
	"governance.Service.Get": func(t *testing.T, w *world) {
		ctx := context.Background()
		svc := governance.NewService(w.pool)
		_, err := svc.Get(ctx, w.adminB, w.a.ID, w.shared.ID)
		wantErr(t, err, problem.ErrNotFound)
		_, err = svc.Get(ctx, w.adminA, w.a.ID, w.ofA.ID)
		wantErr(t, err, problem.ErrNotFound) // unpublished: nothing to govern yet
		v, err := svc.Get(ctx, w.readerA, w.a.ID, w.shared.ID)
		must(t, err)
		if v.Component.ID != w.shared.ID || !v.Effective.IsAllowed {
			t.Fatalf("reader of A sees %+v", v)
		}
	},
	"governance.Service.Set": func(t *testing.T, w *world) {
		ctx := context.Background()
		svc := governance.NewService(w.pool)
		allow := true
		rule := governance.Change{IsAllowed: &allow}
		_, err := svc.Set(ctx, w.adminB, w.a.ID, w.shared.ID, rule)
		wantErr(t, err, problem.ErrNotFound)
		_, err = svc.Set(ctx, w.userA, w.a.ID, w.shared.ID, rule)
		wantErr(t, err, problem.ErrForbidden)
		_, err = svc.Set(ctx, w.adminA, w.a.ID, w.shared.ID, governance.Change{Scope: governance.Provider, IsAllowed: &allow})
		wantErr(t, err, problem.ErrForbidden)
		v, err := svc.Set(ctx, w.adminA, w.a.ID, w.shared.ID, rule)
		must(t, err)
		if v.Tenant == nil || v.Provider != nil {
			t.Fatalf("tenant admin of A wrote %+v, want the tenant's rule", v)
		}
		v, err = svc.Set(ctx, w.admin, w.a.ID, w.shared.ID, rule)
		must(t, err)
		if v.Provider == nil {
			t.Fatal("the provider admin's rule is not the provider's")
		}
	},
	"governance.Service.Clear": func(t *testing.T, w *world) {
		ctx := context.Background()
		svc := governance.NewService(w.pool)
		allow := true
		_, err := svc.Set(ctx, w.admin, w.a.ID, w.shared.ID, governance.Change{Scope: governance.Provider, IsAllowed: &allow})
		must(t, err)
		_, err = svc.Clear(ctx, w.adminB, w.a.ID, w.shared.ID, governance.Provider)
		wantErr(t, err, problem.ErrNotFound)
		_, err = svc.Clear(ctx, w.adminA, w.a.ID, w.shared.ID, governance.Provider)
		wantErr(t, err, problem.ErrForbidden)
		_, err = svc.Clear(ctx, w.userA, w.a.ID, w.shared.ID, governance.Tenant)
		wantErr(t, err, problem.ErrForbidden)
		v, err := svc.Clear(ctx, w.admin, w.a.ID, w.shared.ID, governance.Provider)
		must(t, err)
		if v.Provider != nil {
			t.Fatalf("the provider's ceiling is still there: %+v", v.Provider)
		}
	},
	"governance.Service.List": func(t *testing.T, w *world) {
		ctx := context.Background()
		svc := governance.NewService(w.pool)
		_, err := svc.List(ctx, w.adminB, w.a.ID)
		wantErr(t, err, problem.ErrNotFound)
		o, err := svc.List(ctx, w.readerA, w.a.ID)
		must(t, err)
		if len(o.Components) != 1 || o.Components[0].Component.ID != w.shared.ID {
			t.Fatalf("reader of A lists %+v, want only the published provider-level component", o.Components)
		}
	},
}
