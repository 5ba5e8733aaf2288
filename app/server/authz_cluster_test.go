package server_test

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/access"
	"nimbus/app/cluster"
	"nimbus/app/landingzone"
	"nimbus/app/problem"
)

// fakeAPIServer answers what saving a cluster asks, for the authorization cases only: the
// cluster tests run a real API server.
func fakeAPIServer(t *testing.T) []byte {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer fake-token" {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/version":
			w.Write([]byte(`{"gitVersion":"v1.37.2"}`))
		case "/apis/authentication.k8s.io/v1/selfsubjectreviews":
			w.WriteHeader(http.StatusCreated)
			w.Write([]byte(`{"status":{"userInfo":{"username":"admin"}}}`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return cluster.Kubeconfig{Server: srv.URL, CA: ca, Token: "fake-token"}.Marshal()
}

// kubeZone is a draft landing zone for Kubernetes.
func (w *world) kubeZone(t *testing.T) uuid.UUID {
	return fixture(w, "kubeZone", func() uuid.UUID {
		z, err := w.zones.Create(context.Background(), w.admin, landingzone.NewZone{Name: "kube", Provider: "kubernetes"})
		must(t, err)
		return z.ID
	})
}

// zoneCluster gives the Kubernetes zone a cluster.
func (w *world) zoneCluster(t *testing.T) cluster.Cluster {
	return fixture(w, "zoneCluster", func() cluster.Cluster {
		c, err := cluster.NewService(w.pool, w.keys).Set(context.Background(), w.admin, w.kubeZone(t), fakeAPIServer(t))
		must(t, err)
		return c
	})
}

var clusterCases = map[string]authzCase{
	"cluster.Service.Set": {
		refused: []refusal{{adminA, problem.ErrForbidden}, {userA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			_, err := cluster.NewService(w.pool, w.keys).Set(context.Background(), p, w.kubeZone(t), fakeAPIServer(t))
			return err
		},
	},
	"cluster.Service.Get": {
		refused: []refusal{{adminA, problem.ErrNotFound}, {userA, problem.ErrNotFound}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			w.zoneCluster(t)
			c, err := cluster.NewService(w.pool, w.keys).Get(context.Background(), p, w.kubeZone(t))
			if err == nil && c == nil {
				t.Error("the zone's cluster is missing")
			}
			return err
		},
	},
	"cluster.Service.Recheck": {
		refused: []refusal{{adminA, problem.ErrForbidden}, {userA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			w.zoneCluster(t)
			_, err := cluster.NewService(w.pool, w.keys).Recheck(context.Background(), p, w.kubeZone(t))
			return err
		},
	},
	"cluster.Service.Remove": {
		refused: []refusal{{adminA, problem.ErrForbidden}, {userA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			svc := cluster.NewService(w.pool, w.keys)
			if _, err := svc.Set(context.Background(), w.admin, w.kubeZone(t), fakeAPIServer(t)); err != nil {
				t.Fatal(err)
			}
			return svc.Remove(context.Background(), p, w.kubeZone(t))
		},
	},
}
