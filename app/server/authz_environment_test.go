package server_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/access"
	"nimbus/app/environment"
	"nimbus/app/problem"
)

// dev is tenant A's environment dev, made by its admin outside any landing zone; it is active.
func (w *world) dev(t *testing.T) environment.Environment {
	return fixture(w, "dev", func() environment.Environment {
		env, err := w.envs.Create(context.Background(), w.adminA, w.a.ID, "dev")
		must(t, err)
		return env
	})
}

var environmentCases = map[string]authzCase{
	"environment.Lifecycle.Open": {
		refused: []refusal{{adminB, invalid("tenant_id")}, {userA, problem.ErrForbidden}},
		served:  []actor{adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			id, err := w.lifecycle.Open(context.Background(), p, environment.New{TenantID: w.a.ID, Name: "dev", TemplateID: w.zone(t).template})
			if err != nil {
				return err
			}
			env, err := w.envs.Get(context.Background(), w.readerA, id)
			must(t, err)
			if env.Status != "provisioning" || env.Template != "basic" {
				t.Errorf("the new environment: %+v", env)
			}
			return nil
		},
	},
	"environment.Lifecycle.Decommission": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {userA, problem.ErrForbidden}},
		served:  []actor{adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			return w.lifecycle.Decommission(context.Background(), p, w.dev(t).ID)
		},
		then: func(t *testing.T, w *world) {
			env, err := w.envs.Get(context.Background(), w.adminA, w.dev(t).ID)
			must(t, err)
			if env.Status != "decommissioning" {
				t.Fatalf("the decommissioned environment is %s", env.Status)
			}
			wantField(t, w.lifecycle.Decommission(context.Background(), w.adminA, w.zoned(t)), "status") // while it provisions
		},
	},
	"environment.Lifecycle.Retry": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {readerA, problem.ErrForbidden}},
		served:  []actor{adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			id := fixture(w, "failed", func() uuid.UUID {
				id := w.zoned(t)
				_, err := w.pool.Exec(context.Background(), `UPDATE environments SET status = 'failed', status_reason = 'web did not deploy' WHERE id = $1`, id)
				must(t, err)
				return id
			})
			return w.lifecycle.Retry(context.Background(), p, id)
		},
		then: func(t *testing.T, w *world) {
			wantField(t, w.lifecycle.Retry(context.Background(), w.adminA, w.zoned(t)), "status") // retrying what did not fail
		},
	},
	"environment.Service.Create": {
		refused: []refusal{{adminB, invalid("tenant_id")}, {userA, problem.ErrForbidden}},
		served:  []actor{adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			_, err := w.envs.Create(context.Background(), p, w.a.ID, "dev")
			return err
		},
		then: func(t *testing.T, w *world) {
			_, err := w.envs.Create(context.Background(), w.adminA, w.a.ID, "DEV")
			wantField(t, err, "name") // a second dev
		},
	},
	"environment.Service.Get": {
		refused: []refusal{{adminB, problem.ErrNotFound}},
		served:  []actor{readerA, providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			_, err := w.envs.Get(context.Background(), p, w.dev(t).ID)
			return err
		},
	},
	"environment.Service.Policies": {
		refused: []refusal{{adminB, problem.ErrNotFound}},
		served:  []actor{readerA, providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			_, err := w.envs.Policies(context.Background(), p, w.dev(t).ID)
			return err
		},
	},
	"environment.Service.List": {
		refused: []refusal{{adminB, errHidden}},
		served:  []actor{readerA, providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			env := w.dev(t)
			got, err := w.envs.List(context.Background(), p)
			for _, e := range got {
				if !p.Can(access.EnvironmentRead, e.TenantID) {
					t.Errorf("%s lists %s of another tenant", p.Email, e.Name)
				}
			}
			return shown(got, err, func(e environment.Environment) bool { return e.ID == env.ID })
		},
		then: func(t *testing.T, w *world) {
			got, err := w.envs.List(context.Background(), w.readerA)
			must(t, err)
			if len(got) != 1 {
				t.Fatalf("reader of A lists %d environments, want 1", len(got))
			}
		},
	},
}
