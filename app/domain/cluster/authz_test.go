package cluster_test

import (
	"context"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/domain/cluster"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
)

var clusterCases = map[string]apptest.AuthzCase{
	"cluster.Service.Set": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}, {Who: apptest.UserA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := cluster.NewService(w.Pool, w.Keys).Set(context.Background(), p, w.KubeZone(t), apptest.FakeAPIServer(t))
			return err
		},
	},
	"cluster.Service.Get": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrNotFound}, {Who: apptest.UserA, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			w.ZoneCluster(t)
			c, err := cluster.NewService(w.Pool, w.Keys).Get(context.Background(), p, w.KubeZone(t))
			if err == nil && c == nil {
				t.Error("the zone's cluster is missing")
			}
			return err
		},
	},
	"cluster.Service.Recheck": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}, {Who: apptest.UserA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			w.ZoneCluster(t)
			_, err := cluster.NewService(w.Pool, w.Keys).Recheck(context.Background(), p, w.KubeZone(t))
			return err
		},
	},
	"cluster.Service.Remove": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}, {Who: apptest.UserA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			svc := cluster.NewService(w.Pool, w.Keys)
			if _, err := svc.Set(context.Background(), w.Admin, w.KubeZone(t), apptest.FakeAPIServer(t)); err != nil {
				t.Fatal(err)
			}
			return svc.Remove(context.Background(), p, w.KubeZone(t))
		},
	},
}

// TestAuthz_Methods runs the authorization case of each of the package's data-access methods.
func TestAuthz_Methods(t *testing.T) { apptest.RunAuthz(t, clusterCases) }
