package governance_test

import (
	"context"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/domain/governance"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
)

var governanceCases = map[string]apptest.AuthzCase{
	"governance.Service.Get": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ReaderA, apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			v, err := w.Governance.Get(context.Background(), p, w.A.ID, w.Shared.ID)
			if err == nil && (v.Component.ID != w.Shared.ID || !v.Effective.IsAllowed) {
				t.Errorf("%s sees %+v", p.Email, v)
			}
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			_, err := w.Governance.Get(context.Background(), w.AdminA, w.A.ID, w.OfA.ID)
			apptest.WantErr(t, err, problem.ErrNotFound) // unpublished: nothing to govern yet
		},
	},
	"governance.Service.Set": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.UserA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.AdminA, apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			v, err := w.Governance.Set(context.Background(), p, w.A.ID, w.Shared.ID, governance.Change{IsAllowed: apptest.Ptr(true)})
			switch {
			case err != nil:
			case p.ProviderAdmin && v.Provider == nil:
				t.Error("the provider admin's rule is not the provider's")
			case !p.ProviderAdmin && (v.Tenant == nil || v.Provider != nil):
				t.Errorf("tenant admin of A wrote %+v, want the tenant's rule", v)
			}
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			_, err := w.Governance.Set(context.Background(), w.AdminA, w.A.ID, w.Shared.ID, governance.Change{Scope: governance.Provider, IsAllowed: apptest.Ptr(true)})
			apptest.WantErr(t, err, problem.ErrForbidden) // the ceiling is the provider's
		},
	},
	"governance.Service.Clear": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.AdminA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			apptest.Fixture(w, "ceiling", func() bool {
				_, err := w.Governance.Set(context.Background(), w.Admin, w.A.ID, w.Shared.ID, governance.Change{Scope: governance.Provider, IsAllowed: apptest.Ptr(true)})
				apptest.Must(t, err)
				return true
			})
			v, err := w.Governance.Clear(context.Background(), p, w.A.ID, w.Shared.ID, governance.Provider)
			if err == nil && v.Provider != nil {
				t.Errorf("the provider's ceiling is still there: %+v", v.Provider)
			}
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			_, err := w.Governance.Clear(context.Background(), w.UserA, w.A.ID, w.Shared.ID, governance.Tenant)
			apptest.WantErr(t, err, problem.ErrForbidden)
		},
	},
	"governance.Service.List": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ReaderA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			o, err := w.Governance.List(context.Background(), p, w.A.ID)
			if err == nil && (len(o.Components) != 1 || o.Components[0].Component.ID != w.Shared.ID) {
				t.Errorf("reader of A lists %+v, want only the published provider-level component", o.Components)
			}
			return err
		},
	},
}

// TestAuthz_Methods runs the authorization case of each of the package's data-access methods.
func TestAuthz_Methods(t *testing.T) { apptest.RunAuthz(t, governanceCases) }
