package server_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/access"
	"nimbus/app/landingzone"
	"nimbus/app/policy"
	"nimbus/app/problem"
)

// policyZone is a draft landing zone with one policy.
func (w *world) policyZone(t *testing.T) (zone uuid.UUID, p policy.Policy) {
	type made struct {
		zone uuid.UUID
		p    policy.Policy
	}
	m := fixture(w, "policyZone", func() made {
		z, err := w.zones.Create(context.Background(), w.admin, landingzone.NewZone{Name: "policed", Provider: "simcloud"})
		must(t, err)
		p, err := policy.NewService(w.pool).Create(context.Background(), w.admin, z.ID, newPolicy("small"))
		must(t, err)
		return made{z.ID, p}
	})
	return m.zone, m.p
}

func newPolicy(name string) policy.Input {
	return policy.Input{Name: name, Message: "machines have at most 2 cores", Level: policy.Mandatory,
		Expression: `resource.type != "simcloud:index:Machine" || resource.inputs.cores <= 2`}
}

var policyCases = map[string]authzCase{
	"policy.Service.List": {
		refused: []refusal{{adminA, problem.ErrNotFound}, {userA, problem.ErrNotFound}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			zone, made := w.policyZone(t)
			got, err := policy.NewService(w.pool).List(context.Background(), p, zone)
			return shown(got, err, func(x policy.Policy) bool { return x.ID == made.ID })
		},
	},
	"policy.Service.Get": {
		refused: []refusal{{adminA, problem.ErrNotFound}, {userA, problem.ErrNotFound}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			zone, made := w.policyZone(t)
			_, err := policy.NewService(w.pool).Get(context.Background(), p, zone, made.ID)
			return err
		},
	},
	"policy.Service.Versions": {
		refused: []refusal{{adminA, problem.ErrNotFound}, {userA, problem.ErrNotFound}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			zone, _ := w.policyZone(t)
			got, err := policy.NewService(w.pool).Versions(context.Background(), p, zone)
			return shown(got, err, func(v policy.Version) bool { return v.Version == 1 })
		},
	},
	"policy.Service.Create": {
		refused: []refusal{{adminA, problem.ErrForbidden}, {userA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			zone, _ := w.policyZone(t)
			_, err := policy.NewService(w.pool).Create(context.Background(), p, zone, newPolicy("another"))
			return err
		},
	},
	"policy.Service.Update": {
		refused: []refusal{{adminA, problem.ErrForbidden}, {userA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			zone, made := w.policyZone(t)
			_, err := policy.NewService(w.pool).Update(context.Background(), p, zone, made.ID, newPolicy("renamed"))
			return err
		},
	},
	"policy.Service.Remove": {
		refused: []refusal{{adminA, problem.ErrForbidden}, {userA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			zone, made := w.policyZone(t)
			return policy.NewService(w.pool).Remove(context.Background(), p, zone, made.ID)
		},
	},
}
