package apptest

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/domain/component"
	"nimbus/app/domain/tenant"
)

// FactoryZone publishes the Kubernetes zone with its cluster and makes the built-in tenant
// factory, published, its factory.
func (w *World) FactoryZone(t *testing.T) uuid.UUID {
	return Fixture(w, "factoryZone", func() uuid.UUID {
		ctx := context.Background()
		w.ZoneCluster(t)
		if _, err := w.Zones.Publish(ctx, w.Admin, w.KubeZone(t)); err != nil {
			t.Fatal(err)
		}
		if _, err := component.EnsureBuiltins(ctx, w.Components); err != nil {
			t.Fatal(err)
		}
		st, err := w.Provisions.CreateFactory(ctx, w.Admin)
		Must(t, err)
		if _, err := w.Resolvers.SetZoneConfig(ctx, w.Admin, w.KubeZone(t), "secret_provisioner", json.RawMessage(`{"length": 32}`)); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Stacks.Publish(ctx, w.Admin, st.ID, "The factory."); err != nil {
			t.Fatal(err)
		}
		Must(t, w.Provisions.SetFactory(ctx, w.Admin, w.KubeZone(t), &st.ID))
		return w.KubeZone(t)
	})
}

// TenantNamespace provisions tenant A on the factory zone.
func (w *World) TenantNamespace(t *testing.T) uuid.UUID {
	return Fixture(w, "tenantNamespace", func() uuid.UUID {
		n, err := w.Provisions.Provision(context.Background(), w.Admin, w.A.ID, tenant.NamespaceRequest{LandingZoneID: w.FactoryZone(t), Tier: "small"})
		Must(t, err)
		return n.ID
	})
}

// NamespacesOf lists a tenant's namespaces on clusters.
func (s *Site) NamespacesOf(t testing.TB, token, tenant string) []map[string]any {
	t.Helper()
	r := s.Call(t, "GET", "/api/v1/tenants/"+tenant+"/namespaces", token, nil)
	WantStatus(t, r, http.StatusOK)
	var out []map[string]any
	Must(t, json.Unmarshal(r.Body, &out))
	return out
}

// FactoryZone makes a published Kubernetes zone on plane's cluster whose tenant factory is the
// built-in one, and returns the zone's and the factory stack's IDs.
func (s *Site) FactoryZone(t testing.TB, root string, kubeconfig []byte) (zone, factory string) {
	t.Helper()
	BuiltinIDs(t, s)
	r := s.Call(t, "POST", "/api/v1/landing-zones", root, map[string]any{"name": "k8s", "provider": "kubernetes"})
	WantStatus(t, r, http.StatusCreated)
	zone = r.JSON(t)["id"].(string)
	WantStatus(t, s.Call(t, "PUT", "/api/v1/landing-zones/"+zone+"/cluster", root, map[string]any{"kubeconfig": string(kubeconfig)}), http.StatusOK)
	WantStatus(t, s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/publish", root, nil), http.StatusAccepted)
	if z := s.WaitZoneServices(t, root, zone); z["system_status"] != "active" {
		t.Fatalf("after publishing: %v", z)
	}
	r = s.Call(t, "POST", "/api/v1/stacks/tenant-factory", root, nil)
	WantStatus(t, r, http.StatusCreated)
	factory = r.JSON(t)["id"].(string)
	// A draft is no factory yet.
	r = s.Call(t, "PUT", "/api/v1/landing-zones/"+zone+"/tenant-factory", root, map[string]any{"stack_id": factory})
	WantStatus(t, r, http.StatusUnprocessableEntity)
	WantIn(t, r, `"field":"stack_id"`, "publish it first")
	WantStatus(t, s.Call(t, "POST", "/api/v1/stacks/"+factory+"/publish", root, map[string]any{"changelog": "The tenant factory."}), http.StatusCreated)
	// Its secret's password comes from the zone's secret provisioner, which the zone must have.
	r = s.Call(t, "PUT", "/api/v1/landing-zones/"+zone+"/tenant-factory", root, map[string]any{"stack_id": factory})
	WantStatus(t, r, http.StatusUnprocessableEntity)
	WantIn(t, r, `"field":"resolvers.secret_provisioner"`, "factory's secret needs password")
	WantStatus(t, s.Call(t, "PUT", "/api/v1/landing-zones/"+zone+"/resolvers/secret_provisioner", root, `{"length": 32}`), http.StatusOK)
	r = s.Call(t, "PUT", "/api/v1/landing-zones/"+zone+"/tenant-factory", root, map[string]any{"stack_id": factory})
	WantStatus(t, r, http.StatusOK)
	return zone, factory
}
