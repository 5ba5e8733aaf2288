package server_test

import (
	"context"
	"testing"

	"nimbus/app/access"
	"nimbus/app/governance"
	"nimbus/app/problem"
)

var governanceCases = map[string]authzCase{
	"governance.Service.Get": {
		refused: []refusal{{adminB, problem.ErrNotFound}},
		served:  []actor{readerA, providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			v, err := w.governance.Get(context.Background(), p, w.a.ID, w.shared.ID)
			if err == nil && (v.Component.ID != w.shared.ID || !v.Effective.IsAllowed) {
				t.Errorf("%s sees %+v", p.Email, v)
			}
			return err
		},
		then: func(t *testing.T, w *world) {
			_, err := w.governance.Get(context.Background(), w.adminA, w.a.ID, w.ofA.ID)
			wantErr(t, err, problem.ErrNotFound) // unpublished: nothing to govern yet
		},
	},
	"governance.Service.Set": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {userA, problem.ErrForbidden}},
		served:  []actor{adminA, providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			v, err := w.governance.Set(context.Background(), p, w.a.ID, w.shared.ID, governance.Change{IsAllowed: ptr(true)})
			switch {
			case err != nil:
			case p.ProviderAdmin && v.Provider == nil:
				t.Error("the provider admin's rule is not the provider's")
			case !p.ProviderAdmin && (v.Tenant == nil || v.Provider != nil):
				t.Errorf("tenant admin of A wrote %+v, want the tenant's rule", v)
			}
			return err
		},
		then: func(t *testing.T, w *world) {
			_, err := w.governance.Set(context.Background(), w.adminA, w.a.ID, w.shared.ID, governance.Change{Scope: governance.Provider, IsAllowed: ptr(true)})
			wantErr(t, err, problem.ErrForbidden) // the ceiling is the provider's
		},
	},
	"governance.Service.Clear": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {adminA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			fixture(w, "ceiling", func() bool {
				_, err := w.governance.Set(context.Background(), w.admin, w.a.ID, w.shared.ID, governance.Change{Scope: governance.Provider, IsAllowed: ptr(true)})
				must(t, err)
				return true
			})
			v, err := w.governance.Clear(context.Background(), p, w.a.ID, w.shared.ID, governance.Provider)
			if err == nil && v.Provider != nil {
				t.Errorf("the provider's ceiling is still there: %+v", v.Provider)
			}
			return err
		},
		then: func(t *testing.T, w *world) {
			_, err := w.governance.Clear(context.Background(), w.userA, w.a.ID, w.shared.ID, governance.Tenant)
			wantErr(t, err, problem.ErrForbidden)
		},
	},
	"governance.Service.List": {
		refused: []refusal{{adminB, problem.ErrNotFound}},
		served:  []actor{readerA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			o, err := w.governance.List(context.Background(), p, w.a.ID)
			if err == nil && (len(o.Components) != 1 || o.Components[0].Component.ID != w.shared.ID) {
				t.Errorf("reader of A lists %+v, want only the published provider-level component", o.Components)
			}
			return err
		},
	},
}
