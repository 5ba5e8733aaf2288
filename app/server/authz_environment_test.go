package server_test

import (
	"context"
	"testing"

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
