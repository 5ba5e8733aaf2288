package dashboard_test

import (
	"context"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/kernel/access"
	"nimbus/app/orchestration/dashboard"
	"nimbus/app/orchestration/environment"
)

var zoneCases = map[string]apptest.AuthzCase{
	"dashboard.Service.Overview": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: apptest.ErrHidden}},
		Served:  []apptest.Actor{apptest.ReaderA, apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			env := w.Dev(t)
			w.NetA(t) // a pool, which only the provider admin's overview shows
			o, err := dashboard.NewService(w.Pool, w.Envs, w.Ipam).Overview(context.Background(), p)
			if err == nil && !p.ProviderAdmin && len(o.Pools) != 0 {
				t.Errorf("%s sees pools %+v", p.Email, o.Pools)
			}
			return apptest.Shown(o.Environments, err, func(e environment.Environment) bool { return e.ID == env.ID })
		},
		Then: func(t *testing.T, w *apptest.World) {
			svc := dashboard.NewService(w.Pool, w.Envs, w.Ipam)
			o, err := svc.Overview(context.Background(), w.AdminB)
			apptest.Must(t, err)
			if len(o.Environments) != 0 {
				t.Fatalf("tenant B's admin sees %+v", o.Environments)
			}
			o, err = svc.Overview(context.Background(), w.ReaderA)
			apptest.Must(t, err)
			if len(o.Environments) != 1 {
				t.Fatalf("tenant A's reader sees %+v", o.Environments)
			}
			o, err = svc.Overview(context.Background(), w.Admin)
			apptest.Must(t, err)
			if len(o.Pools) != 1 {
				t.Fatalf("the provider admin sees pools %+v", o.Pools)
			}
		},
	},
}

// TestAuthz_Methods runs the authorization case of each of the package's data-access methods.
func TestAuthz_Methods(t *testing.T) { apptest.RunAuthz(t, zoneCases) }
