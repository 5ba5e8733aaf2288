package poller_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"nimbus/app/apptest"
)

// TestDiscover_WhatIsMadeOutsideNimbusInAClusterIsTheZones provisions a tenant's namespace on a
// landing zone's cluster, then makes another namespace and workloads on the cluster by hand:
// the poller finds the strangers unmanaged items of the zone (a workload in the tenant's
// namespace too: no deployment made it), while the tenant's namespace is Nimbus's, and
// Kubernetes' own namespaces and workloads are no one's business.
func TestDiscover_WhatIsMadeOutsideNimbusInAClusterIsTheZones(t *testing.T) {
	plane := apptest.KubePlane(t)
	s := apptest.NewSiteWith(t, apptest.SiteConfig{Backend: "file", PollInterval: 200 * time.Millisecond})
	root := s.Token(t, s.Admin)
	zone, _ := s.FactoryZone(t, root, plane.Kubeconfig())
	r := s.Call(t, "POST", "/api/v1/tenants", root, map[string]any{"name": "Kube"})
	apptest.WantStatus(t, r, http.StatusCreated)
	r = s.Call(t, "POST", "/api/v1/tenants/"+r.JSON(t)["id"].(string)+"/namespaces", root, map[string]any{"landing_zone_id": zone, "namespace": "team-kube"})
	apptest.WantStatus(t, r, http.StatusAccepted)
	s.WaitInstance(t, root, r.JSON(t)["stack_instance_id"].(string), apptest.Status("active"))

	byHand := func(path, body string) {
		t.Helper()
		req, _ := http.NewRequest("POST", plane.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+plane.Token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := plane.Client().Do(req)
		apptest.Must(t, err)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("make %s by hand: %s", path, resp.Status)
		}
	}
	byHand("/api/v1/namespaces", `{"metadata":{"name":"by-hand"}}`)
	workload := func(ns, name string) string {
		return `{"metadata":{"name":"` + name + `","namespace":"` + ns + `"},"spec":{"selector":{"matchLabels":{"app":"` + name + `"}},
			"template":{"metadata":{"labels":{"app":"` + name + `"}},"spec":{"containers":[{"name":"c","image":"example"}]}}}}`
	}
	byHand("/apis/apps/v1/namespaces/by-hand/deployments", workload("by-hand", "web"))
	byHand("/apis/apps/v1/namespaces/team-kube/deployments", workload("team-kube", "sidecar"))
	byHand("/apis/apps/v1/namespaces/kube-system/deployments", workload("kube-system", "own"))

	unmanaged := func() map[string]map[string]any {
		out := map[string]map[string]any{}
		for _, it := range s.Call(t, "GET", "/api/v1/inventory?status=unmanaged", root, nil).JSON(t)["items"].([]any) {
			m := it.(map[string]any)
			out[m["provider_id"].(string)] = m
		}
		return out
	}
	apptest.WaitFor(t, "the poller to find the namespace and workloads made by hand", func() bool {
		found := unmanaged()
		return found["by-hand"] != nil && found["by-hand/web"] != nil && found["team-kube/sidecar"] != nil
	})
	found := unmanaged()
	if found["by-hand"]["landing_zone_id"] != zone || found["by-hand"]["tenant_id"] != nil {
		t.Fatalf("the namespace made by hand: %v, want an item of zone %s and no tenant", found["by-hand"], zone)
	}
	if found["by-hand"]["type"] != "kubernetes:core/v1:Namespace" || found["by-hand/web"]["type"] != "kubernetes:apps/v1:Deployment" ||
		found["by-hand/web"]["landing_zone_id"] != zone {
		t.Errorf("made by hand: %v and %v, want a namespace and a deployment of zone %s", found["by-hand"], found["by-hand/web"], zone)
	}
	for _, id := range []string{"team-kube", "default", "kube-system", "kube-system/own"} {
		if found[id] != nil {
			t.Errorf("%s is unmanaged", id)
		}
	}
}
