package poller_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"nimbus/app/apptest"
)

// TestDiscover_ANamespaceMadeOutsideNimbusIsTheZones provisions a tenant's namespace on a
// landing zone's cluster, then makes another namespace on the cluster by hand: the poller finds
// the stranger an unmanaged item of the zone, while the tenant's namespace is Nimbus's, and
// Kubernetes' own namespaces are no one's business.
func TestDiscover_ANamespaceMadeOutsideNimbusIsTheZones(t *testing.T) {
	plane := apptest.KubePlane(t)
	s := apptest.NewSiteWith(t, apptest.SiteConfig{Backend: "file", PollInterval: 200 * time.Millisecond})
	root := s.Token(t, s.Admin)
	zone, _ := s.FactoryZone(t, root, plane.Kubeconfig())
	r := s.Call(t, "POST", "/api/v1/tenants", root, map[string]any{"name": "Kube"})
	apptest.WantStatus(t, r, http.StatusCreated)
	r = s.Call(t, "POST", "/api/v1/tenants/"+r.JSON(t)["id"].(string)+"/namespaces", root, map[string]any{"landing_zone_id": zone, "namespace": "team-kube"})
	apptest.WantStatus(t, r, http.StatusAccepted)
	s.WaitInstance(t, root, r.JSON(t)["stack_instance_id"].(string), apptest.Status("active"))

	req, _ := http.NewRequest("POST", plane.URL+"/api/v1/namespaces", strings.NewReader(`{"metadata":{"name":"by-hand"}}`))
	req.Header.Set("Authorization", "Bearer "+plane.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := plane.Client().Do(req)
	apptest.Must(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("make a namespace by hand: %s", resp.Status)
	}

	unmanaged := func() map[string]map[string]any {
		out := map[string]map[string]any{}
		for _, it := range s.Call(t, "GET", "/api/v1/inventory?status=unmanaged&type=kubernetes:core/v1:Namespace", root, nil).JSON(t)["items"].([]any) {
			m := it.(map[string]any)
			out[m["provider_id"].(string)] = m
		}
		return out
	}
	apptest.WaitFor(t, "the poller to find the namespace made by hand", func() bool { return unmanaged()["by-hand"] != nil })
	found := unmanaged()
	if found["by-hand"]["landing_zone_id"] != zone || found["by-hand"]["tenant_id"] != nil {
		t.Fatalf("the namespace made by hand: %v, want an item of zone %s and no tenant", found["by-hand"], zone)
	}
	for _, ns := range []string{"team-kube", "default", "kube-system"} {
		if found[ns] != nil {
			t.Errorf("namespace %s is unmanaged", ns)
		}
	}
}
