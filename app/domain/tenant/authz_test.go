package tenant_test

import (
	"context"
	"strings"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/domain/tenant"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
)

var provisionCases = map[string]apptest.AuthzCase{
	"tenant.Service.CreateProvisioned": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}, {Who: apptest.UserA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := w.Tenants.WithNamespaces(w.Provisions).CreateProvisioned(context.Background(), p, "Tenant C",
				&tenant.NamespaceRequest{LandingZoneID: w.FactoryZone(t), Tier: "medium"})
			return err
		},
	},
}

var accountCases = map[string]apptest.AuthzCase{
	"tenant.Service.List": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: apptest.ErrHidden}},
		Served:  []apptest.Actor{apptest.ReaderA, apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			got, err := w.Tenants.List(context.Background(), p)
			for _, x := range got {
				if !p.Member(x.ID) {
					t.Errorf("%s lists %s, not theirs", p.Email, x.Name)
				}
			}
			return apptest.Shown(got, err, func(x tenant.Tenant) bool { return x.ID == w.A.ID })
		},
		Then: func(t *testing.T, w *apptest.World) {
			all, err := w.Tenants.List(context.Background(), w.Admin)
			apptest.Must(t, err)
			if len(all) != 2 {
				t.Fatalf("provider admin lists %d tenants, want 2", len(all))
			}
		},
	},
	"tenant.Service.Get": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.Stranger, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ReaderA, apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := w.Tenants.Get(context.Background(), p, w.A.ID)
			return err
		},
	},
	"tenant.Service.Create": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := w.Tenants.Create(context.Background(), p, "Allowed")
			return err
		},
	},
	"tenant.Service.Rename": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.AdminA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := w.Tenants.Rename(context.Background(), p, w.A.ID, "Tenant A, renamed")
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			got, err := w.Tenants.Get(context.Background(), w.AdminA, w.A.ID)
			apptest.Must(t, err)
			if got.Name != "Tenant A, renamed" {
				t.Fatalf("tenant A is named %q after the rename", got.Name)
			}
			_, err = w.Tenants.Rename(context.Background(), w.Admin, w.A.ID, "tenant b")
			apptest.WantField(t, err, "name")
		},
	},
	"tenant.Service.Delete": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrNotFound}, {Who: apptest.UserA, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			empty := apptest.Fixture(w, "empty tenant", func() tenant.Tenant {
				tn, err := w.Tenants.Create(context.Background(), w.Admin, "Empty")
				apptest.Must(t, err)
				return tn
			})
			return w.Tenants.Delete(context.Background(), p, empty.ID)
		},
		Then: func(t *testing.T, w *apptest.World) {
			// A tenant with people in it stays, and says so.
			err := w.Tenants.Delete(context.Background(), w.Admin, w.A.ID)
			apptest.WantField(t, err, "tenant")
			if !strings.Contains(err.Error(), "still has 3 members") {
				t.Fatalf("deleting tenant A: %v", err)
			}
		},
	},
	"tenant.Service.Members": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ReaderA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			members, err := w.Tenants.Members(context.Background(), p, w.A.ID)
			if err == nil && len(members) != 3 {
				t.Errorf("tenant A has %d members, want 3", len(members))
			}
			return err
		},
	},
	"tenant.Service.SetMember": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.UserA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := w.Tenants.SetMember(context.Background(), p, w.A.ID, w.ReaderA.UserID, access.User)
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			// Nobody makes themselves an admin of A.
			ctx := context.Background()
			_, err := w.Tenants.SetMember(ctx, w.AdminB, w.A.ID, w.AdminB.UserID, access.TenantAdmin)
			apptest.WantErr(t, err, problem.ErrNotFound)
			_, err = w.Tenants.SetMember(ctx, w.UserA, w.A.ID, w.UserA.UserID, access.TenantAdmin)
			apptest.WantErr(t, err, problem.ErrForbidden)
		},
	},
	"tenant.Service.RemoveMember": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.UserA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			return w.Tenants.RemoveMember(context.Background(), p, w.A.ID, w.ReaderA.UserID)
		},
		Then: func(t *testing.T, w *apptest.World) {
			members, err := w.Tenants.Members(context.Background(), w.AdminA, w.A.ID)
			apptest.Must(t, err)
			if len(members) != 2 {
				t.Fatalf("tenant A has %d members after the removal, want 2", len(members))
			}
		},
	},
	"tenant.Service.UserIDByEmail": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.UserA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			id, err := w.Tenants.UserIDByEmail(context.Background(), p, w.A.ID, "admin-b@example.com")
			if err == nil && id != w.AdminB.UserID {
				t.Errorf("found %s, want %s", id, w.AdminB.UserID)
			}
			return err
		},
	},
}

// TestAuthz_Methods runs the authorization case of each of the package's data-access methods.
func TestAuthz_Methods(t *testing.T) { apptest.RunAuthz(t, provisionCases, accountCases) }
