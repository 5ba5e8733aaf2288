package server_test

import (
	"context"
	"testing"
	"time"

	"nimbus/app/access"
	"nimbus/app/environment"
	"nimbus/app/landingzone"
	"nimbus/app/problem"
)

var ttlCases = map[string]authzCase{
	"environment.Service.Extend": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {userA, problem.ErrForbidden}},
		served:  []actor{adminA, providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			id := fixture(w, "expiring", func() environment.Environment {
				_, err := w.pool.Exec(context.Background(), `UPDATE environments SET expires_at = now() + interval '1 hour' WHERE id = $1`, w.zoned(t))
				must(t, err)
				env, err := w.envs.Get(context.Background(), w.adminA, w.zoned(t))
				must(t, err)
				return env
			})
			env, err := w.envs.Extend(context.Background(), p, id.ID, environment.Extension{By: "1h"})
			if err == nil && !env.ExpiresAt.After(*id.ExpiresAt) {
				t.Errorf("extended, the environment expires at %s, as before", env.ExpiresAt)
			}
			return err
		},
		then: func(t *testing.T, w *world) {
			_, err := w.envs.Extend(context.Background(), w.adminA, w.dev(t).ID, environment.Extension{By: "1h"})
			wantField(t, err, "expires_at") // it does not expire
			at := time.Now()
			_, err = w.envs.Extend(context.Background(), w.adminA, w.zoned(t), environment.Extension{ExpiresAt: &at})
			wantField(t, err, "expires_at") // earlier than its expiry
		},
	},
	"landingzone.Service.SetLifetimes": {
		refused: []refusal{{adminA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			z, err := w.zones.SetLifetimes(context.Background(), p, w.zone(t).zone.ID, landingzone.Lifetimes{Default: "7d", Max: "30d"})
			if err == nil && (z.Default != "7d" || z.Max != "30d") {
				t.Errorf("the zone's lifetimes: %+v", z.Lifetimes)
			}
			return err
		},
		then: func(t *testing.T, w *world) {
			_, err := w.zones.SetLifetimes(context.Background(), w.admin, w.zone(t).zone.ID, landingzone.Lifetimes{Default: "31d", Max: "30d"})
			wantField(t, err, "default_ttl")
		},
	},
}
