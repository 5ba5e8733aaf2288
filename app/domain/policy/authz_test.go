package policy_test

import (
	"context"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/domain/policy"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
)

var policyCases = map[string]apptest.AuthzCase{
	"policy.Service.List": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrNotFound}, {Who: apptest.UserA, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			zone, made := w.PolicyZone(t)
			got, err := policy.NewService(w.Pool).List(context.Background(), p, zone)
			return apptest.Shown(got, err, func(x policy.Policy) bool { return x.ID == made.ID })
		},
	},
	"policy.Service.Get": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrNotFound}, {Who: apptest.UserA, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			zone, made := w.PolicyZone(t)
			_, err := policy.NewService(w.Pool).Get(context.Background(), p, zone, made.ID)
			return err
		},
	},
	"policy.Service.Versions": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrNotFound}, {Who: apptest.UserA, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			zone, _ := w.PolicyZone(t)
			got, err := policy.NewService(w.Pool).Versions(context.Background(), p, zone)
			return apptest.Shown(got, err, func(v policy.Version) bool { return v.Version == 1 })
		},
	},
	"policy.Service.Create": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}, {Who: apptest.UserA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			zone, _ := w.PolicyZone(t)
			_, err := policy.NewService(w.Pool).Create(context.Background(), p, zone, apptest.NewPolicy("another"))
			return err
		},
	},
	"policy.Service.Update": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}, {Who: apptest.UserA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			zone, made := w.PolicyZone(t)
			_, err := policy.NewService(w.Pool).Update(context.Background(), p, zone, made.ID, apptest.NewPolicy("renamed"))
			return err
		},
	},
	"policy.Service.Remove": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}, {Who: apptest.UserA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			zone, made := w.PolicyZone(t)
			return policy.NewService(w.Pool).Remove(context.Background(), p, zone, made.ID)
		},
	},
}

// TestAuthz_Methods runs the authorization case of each of the package's data-access methods.
func TestAuthz_Methods(t *testing.T) { apptest.RunAuthz(t, policyCases) }
