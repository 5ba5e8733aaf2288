package proxmox_test

import (
	"context"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/domain/proxmox"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
)

// set gives the world's Proxmox zone its access, as the provider admin.
func set(t *testing.T, w *apptest.World) {
	t.Helper()
	_, err := proxmox.NewService(w.Pool, w.Keys).Set(context.Background(), w.Admin, w.ProxmoxZone(t), apptest.NewProxmoxAPI(t).Access())
	apptest.Must(t, err)
}

var accessCases = map[string]apptest.AuthzCase{
	"proxmox.Service.Set": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}, {Who: apptest.UserA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := proxmox.NewService(w.Pool, w.Keys).Set(context.Background(), p, w.ProxmoxZone(t), apptest.NewProxmoxAPI(t).Access())
			return err
		},
	},
	"proxmox.Service.Get": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrNotFound}, {Who: apptest.UserA, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			apptest.Fixture(w, "access", func() bool { set(t, w); return true })
			a, err := proxmox.NewService(w.Pool, w.Keys).Get(context.Background(), p, w.ProxmoxZone(t))
			if err == nil && a == nil {
				t.Error("the zone's access is missing")
			}
			return err
		},
	},
	"proxmox.Service.Recheck": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}, {Who: apptest.UserA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			apptest.Fixture(w, "access", func() bool { set(t, w); return true })
			_, err := proxmox.NewService(w.Pool, w.Keys).Recheck(context.Background(), p, w.ProxmoxZone(t))
			return err
		},
	},
	"proxmox.Service.Remove": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}, {Who: apptest.UserA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			set(t, w)
			return proxmox.NewService(w.Pool, w.Keys).Remove(context.Background(), p, w.ProxmoxZone(t))
		},
	},
}

// TestAuthz_Methods runs the authorization case of each of the package's data-access methods.
func TestAuthz_Methods(t *testing.T) { apptest.RunAuthz(t, accessCases) }
