package apptest

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"

	"nimbus/app/domain/cluster"
	"nimbus/app/domain/component"
	"nimbus/app/kernel/access"
	"nimbus/app/orchestration/landingzone"
	"nimbus/e2e/kubeplane"
)

// FakeAPIServer answers what saving a cluster asks, for the authorization cases only: the
// cluster tests run a real API server.
func FakeAPIServer(t *testing.T) []byte {
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

// KubeZone is a draft landing zone for Kubernetes.
func (w *World) KubeZone(t *testing.T) uuid.UUID {
	return Fixture(w, "kubeZone", func() uuid.UUID {
		z, err := w.Zones.Create(context.Background(), w.Admin, landingzone.NewZone{Name: "kube", Provider: "kubernetes"})
		Must(t, err)
		return z.ID
	})
}

// ZoneCluster gives the Kubernetes zone a cluster.
func (w *World) ZoneCluster(t *testing.T) cluster.Cluster {
	return Fixture(w, "zoneCluster", func() cluster.Cluster {
		c, err := cluster.NewService(w.Pool, w.Keys).Set(context.Background(), w.Admin, w.KubeZone(t), FakeAPIServer(t))
		Must(t, err)
		return c
	})
}

// KubeComponent makes a Kubernetes component of the tenant (nil: the provider's, for every
// tenant) taking a name, whose program's resources are resources, and a provider admin
// publishes it.
func KubeComponent(t *testing.T, s *Site, actor access.Principal, tenant *uuid.UUID, name, resources string) string {
	t.Helper()
	c, err := s.Components.Create(t.Context(), actor, component.New{Draft: component.Draft{Name: name, Language: "yaml",
		Code:         "name: " + name + "\nruntime: yaml\nconfig:\n  name:\n    type: string\nresources:\n" + resources,
		InputSchema:  json.RawMessage(`{"type":"object","required":["name"],"properties":{"name":{"type":"string"}}}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{}}`)},
		TenantID: tenant, Provider: "kubernetes", SemanticType: "KubernetesNamespace"})
	Must(t, err)
	_, err = s.Components.Publish(t.Context(), s.Admin, c.ID, c.Revision, "first")
	Must(t, err)
	return c.ID.String()
}

// KubePlane runs a Kubernetes control plane for one test, from the binaries in NIMBUS_KUBE_DIR.
func KubePlane(t testing.TB) *kubeplane.Plane {
	t.Helper()
	bin := os.Getenv(kubeplane.BinEnv)
	if bin == "" {
		t.Fatalf("%s is not set: go tool task test builds etcd and kube-apiserver and sets it", kubeplane.BinEnv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p, err := kubeplane.Start(ctx, bin, t.TempDir())
	Must(t, err)
	t.Cleanup(p.Stop)
	return p
}

// KubeGet reads an object from the plane's API server as its admin: its JSON, or nil when it
// is not there.
func KubeGet(t *testing.T, plane *kubeplane.Plane, path string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest("GET", plane.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+plane.Token)
	resp, err := plane.Client().Do(req)
	Must(t, err)
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil
	}
	var out map[string]any
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", path, resp.Status)
	}
	Must(t, json.NewDecoder(resp.Body).Decode(&out))
	return out
}
