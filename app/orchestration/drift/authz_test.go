package drift_test

import (
	"context"
	"testing"
	"time"

	"nimbus/app/apptest"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
)

var intervalCases = map[string]apptest.AuthzCase{
	"drift.Service.EnvironmentInterval": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.Stranger, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ReaderA, apptest.AdminA, apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			v, err := w.Drift.EnvironmentInterval(context.Background(), p, w.Dev(t).ID)
			if err == nil && (v.Own != nil || v.Effective != nil) {
				t.Errorf("an environment never set: %+v", v)
			}
			return err
		},
	},
	"drift.Service.SetEnvironmentInterval": {
		// The environment's tenant admins decide how often it is checked.
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.UserA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			every := 6 * time.Hour
			v, err := w.Drift.SetEnvironmentInterval(context.Background(), p, w.Dev(t).ID, &every)
			if err == nil && (v.Effective == nil || time.Duration(*v.Effective) != every) {
				t.Errorf("after setting 6h: %+v", v)
			}
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			v, err := w.Drift.EnvironmentInterval(context.Background(), w.UserA, w.Dev(t).ID)
			apptest.Must(t, err)
			if v.Own == nil || time.Duration(*v.Own) != 6*time.Hour {
				t.Errorf("the refused calls changed the interval, or the served one did not: %+v", v)
			}
		},
	},
	"drift.Service.SetZoneInterval": {
		// Only provider admins see landing zones.
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			every := time.Hour
			v, err := w.Drift.SetZoneInterval(context.Background(), p, w.Zone(t).Zone.ID, &every)
			if err == nil && (v == nil || time.Duration(*v) != every) {
				t.Errorf("after setting 1h: %v", v)
			}
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			_, err := w.Drift.SetZoneInterval(context.Background(), w.Admin, w.Zone(t).Zone.ID, new(time.Duration))
			apptest.WantField(t, err, "drift_interval") // only an environment's zero turns checks off
		},
	},
}

// TestAuthz_Methods runs the authorization case of each of the package's data-access methods.
func TestAuthz_Methods(t *testing.T) { apptest.RunAuthz(t, intervalCases) }
