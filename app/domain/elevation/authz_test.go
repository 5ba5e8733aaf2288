package elevation_test

import (
	"context"
	"testing"
	"time"

	"nimbus/app/apptest"
	"nimbus/app/domain/elevation"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
)

// readerElevation is the world's elevation of A's reader to tenant admin of A.
func readerElevation(t *testing.T, w *apptest.World) elevation.Elevation {
	return apptest.Fixture(w, "elevation", func() elevation.Elevation { return grantReader(t, w) })
}

var cases = map[string]apptest.AuthzCase{
	"elevation.Service.Grant": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}, {Who: apptest.AdminB, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := w.Elevations.Grant(context.Background(), p, elevation.Grant{UserID: w.UserA.UserID, TenantID: w.A.ID,
				Role: access.TenantAdmin, Duration: time.Hour, Reason: "on call"})
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			if got := w.Principal(t, "user-a@example.com").Roles[w.A.ID]; got != access.TenantAdmin {
				t.Errorf("A's user is %s in A once elevated", got)
			}
		},
	},
	"elevation.Service.List": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}, {Who: apptest.ReaderA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			e := readerElevation(t, w)
			got, err := w.Elevations.List(context.Background(), p)
			return apptest.Shown(got, err, func(x elevation.Elevation) bool { return x.ID == e.ID })
		},
	},
	"elevation.Service.Choices": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}, {Who: apptest.UserA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, tenants, err := w.Elevations.Choices(context.Background(), p)
			return apptest.Shown(tenants, err, func(c elevation.Choice) bool { return c.ID == w.B.ID })
		},
	},
	"elevation.Service.Revoke": {
		// The elevated reader, a tenant admin of A while it lasts, cannot end it either.
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrNotFound}, {Who: apptest.ReaderA, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			return w.Elevations.Revoke(context.Background(), p, readerElevation(t, w).ID)
		},
		Then: func(t *testing.T, w *apptest.World) {
			if got := w.Principal(t, "reader-a@example.com").Roles[w.A.ID]; got != access.ReadOnly {
				t.Errorf("A's reader is %s in A once the elevation is revoked", got)
			}
		},
	},
}

// TestAuthz_Methods runs the authorization case of each of the package's data-access methods.
func TestAuthz_Methods(t *testing.T) { apptest.RunAuthz(t, cases) }
