package environment_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"nimbus/app/apptest"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/orchestration/environment"
)

var environmentCases = map[string]apptest.AuthzCase{
	"environment.Lifecycle.Open": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: apptest.Invalid("tenant_id")}, {Who: apptest.UserA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			id, err := w.Lifecycle.Open(context.Background(), p, environment.New{TenantID: w.A.ID, Name: "dev", TemplateID: w.Zone(t).Template})
			if err != nil {
				return err
			}
			env, err := w.Envs.Get(context.Background(), w.ReaderA, id)
			apptest.Must(t, err)
			if env.Status != "provisioning" || env.Template != "basic" {
				t.Errorf("the new environment: %+v", env)
			}
			return nil
		},
	},
	"environment.Lifecycle.Decommission": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.UserA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			return w.Lifecycle.Decommission(context.Background(), p, w.Dev(t).ID)
		},
		Then: func(t *testing.T, w *apptest.World) {
			env, err := w.Envs.Get(context.Background(), w.AdminA, w.Dev(t).ID)
			apptest.Must(t, err)
			if env.Status != "decommissioning" {
				t.Fatalf("the decommissioned environment is %s", env.Status)
			}
			apptest.WantField(t, w.Lifecycle.Decommission(context.Background(), w.AdminA, w.Zoned(t)), "status") // while it provisions
		},
	},
	"environment.Lifecycle.Retry": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.ReaderA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			id := apptest.Fixture(w, "failed", func() uuid.UUID {
				id := w.Zoned(t)
				_, err := w.Pool.Exec(context.Background(), `UPDATE environments SET status = 'failed', status_reason = 'web did not deploy' WHERE id = $1`, id)
				apptest.Must(t, err)
				return id
			})
			return w.Lifecycle.Retry(context.Background(), p, id)
		},
		Then: func(t *testing.T, w *apptest.World) {
			apptest.WantField(t, w.Lifecycle.Retry(context.Background(), w.AdminA, w.Zoned(t)), "status") // retrying what did not fail
		},
	},
	"environment.Service.Create": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: apptest.Invalid("tenant_id")}, {Who: apptest.UserA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := w.Envs.Create(context.Background(), p, w.A.ID, "dev")
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			_, err := w.Envs.Create(context.Background(), w.AdminA, w.A.ID, "DEV")
			apptest.WantField(t, err, "name") // a second dev
		},
	},
	"environment.Service.Get": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ReaderA, apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := w.Envs.Get(context.Background(), p, w.Dev(t).ID)
			return err
		},
	},
	"environment.Service.Policies": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ReaderA, apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := w.Envs.Policies(context.Background(), p, w.Dev(t).ID)
			return err
		},
	},
	"environment.Service.Leading": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: apptest.ErrHidden}},
		Served:  []apptest.Actor{apptest.ReaderA, apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			env := w.Dev(t)
			got, total, err := w.Envs.Leading(context.Background(), p, 20)
			for _, e := range got {
				if !p.Can(access.EnvironmentRead, e.TenantID) {
					t.Errorf("%s is shown %s of another tenant", p.Email, e.Name)
				}
			}
			if err == nil && total != len(got) {
				t.Errorf("%s is told of %d environments and shown %d of fewer than twenty", p.Email, total, len(got))
			}
			return apptest.Shown(got, err, func(e environment.Environment) bool { return e.ID == env.ID })
		},
	},
	"environment.Service.List": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: apptest.ErrHidden}},
		Served:  []apptest.Actor{apptest.ReaderA, apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			env := w.Dev(t)
			got, err := w.Envs.List(context.Background(), p)
			for _, e := range got {
				if !p.Can(access.EnvironmentRead, e.TenantID) {
					t.Errorf("%s lists %s of another tenant", p.Email, e.Name)
				}
			}
			return apptest.Shown(got, err, func(e environment.Environment) bool { return e.ID == env.ID })
		},
		Then: func(t *testing.T, w *apptest.World) {
			got, err := w.Envs.List(context.Background(), w.ReaderA)
			apptest.Must(t, err)
			if len(got) != 1 {
				t.Fatalf("reader of A lists %d environments, want 1", len(got))
			}
		},
	},
}

var zoneCases = map[string]apptest.AuthzCase{
	"environment.Service.Detail": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ReaderA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			d, err := w.Envs.Detail(context.Background(), p, w.Dev(t).ID)
			if err == nil && d.Name != "dev" {
				t.Errorf("detail %+v", d)
			}
			return err
		},
	},
}

var ttlCases = map[string]apptest.AuthzCase{
	"environment.Service.Extend": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.UserA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.AdminA, apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			id := apptest.Fixture(w, "expiring", func() environment.Environment {
				_, err := w.Pool.Exec(context.Background(), `UPDATE environments SET expires_at = now() + interval '1 hour' WHERE id = $1`, w.Zoned(t))
				apptest.Must(t, err)
				env, err := w.Envs.Get(context.Background(), w.AdminA, w.Zoned(t))
				apptest.Must(t, err)
				return env
			})
			env, err := w.Envs.Extend(context.Background(), p, id.ID, environment.Extension{By: "1h"})
			if err == nil && !env.ExpiresAt.After(*id.ExpiresAt) {
				t.Errorf("extended, the environment expires at %s, as before", env.ExpiresAt)
			}
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			_, err := w.Envs.Extend(context.Background(), w.AdminA, w.Dev(t).ID, environment.Extension{By: "1h"})
			apptest.WantField(t, err, "expires_at") // it does not expire
			at := time.Now()
			_, err = w.Envs.Extend(context.Background(), w.AdminA, w.Zoned(t), environment.Extension{ExpiresAt: &at})
			apptest.WantField(t, err, "expires_at") // earlier than its expiry
		},
	},
}

// TestAuthz_Methods runs the authorization case of each of the package's data-access methods.
func TestAuthz_Methods(t *testing.T) { apptest.RunAuthz(t, environmentCases, zoneCases, ttlCases) }
