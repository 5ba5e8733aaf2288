package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"nimbus/app/cluster"
	"nimbus/app/environment"
	"nimbus/e2e/kubeplane"
)

// kubePlane runs a Kubernetes control plane for one test, from the binaries in NIMBUS_KUBE_DIR.
func kubePlane(t testing.TB) *kubeplane.Plane {
	t.Helper()
	bin := os.Getenv(kubeplane.BinEnv)
	if bin == "" {
		t.Fatalf("%s is not set: go tool task test builds etcd and kube-apiserver and sets it", kubeplane.BinEnv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p, err := kubeplane.Start(ctx, bin, t.TempDir())
	must(t, err)
	t.Cleanup(p.Stop)
	return p
}

func TestCluster_AProviderAdminSetsAZonesClusterCheckedByItsAPIServer(t *testing.T) {
	plane := kubePlane(t)
	s := newSite(t)
	root, tenantAdmin := s.token(t, s.admin), s.token(t, s.adminA)
	r := s.call(t, "POST", "/api/v1/landing-zones", root, map[string]any{"name": "k8s", "provider": "kubernetes"})
	wantStatus(t, r, http.StatusCreated)
	zone := r.json(t)["id"].(string)
	api, page := "/api/v1/landing-zones/"+zone+"/cluster", "/landing-zones/"+zone+"/cluster"
	r = s.call(t, "POST", "/api/v1/landing-zones", root, map[string]any{"name": "sim", "provider": "simcloud"})
	wantStatus(t, r, http.StatusCreated)
	r = s.call(t, "PUT", "/api/v1/landing-zones/"+r.json(t)["id"].(string)+"/cluster", root, map[string]any{"kubeconfig": string(plane.Kubeconfig())})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantIn(t, r, "is for simcloud, not Kubernetes")
	wantIn(t, s.call(t, "GET", "/landing-zones/"+zone, root, nil), `href="`+page+`"`)
	wantStatus(t, s.call(t, "GET", api, root, nil), http.StatusNotFound)

	// Refused, each with why, and nothing kept.
	for _, c := range []struct {
		name, config, want string
	}{
		{"wrong token", string(plane.KubeconfigWith("not-the-token")), "refused the credentials"},
		{"no server there", string(cluster.Kubeconfig{Server: "https://127.0.0.1:1", CA: plane.CA, Token: plane.Token}.Marshal()), "cannot reach"},
		{"another CA", string(cluster.Kubeconfig{Server: plane.URL, Token: plane.Token}.Marshal()), "certificate"},
		{"exec plugin", strings.Replace(string(plane.Kubeconfig()), "token: "+plane.Token, "exec: {command: /bin/true}", 1), "runs a program"},
	} {
		r := s.call(t, "PUT", api, root, map[string]any{"kubeconfig": c.config})
		wantStatus(t, r, http.StatusUnprocessableEntity)
		if !strings.Contains(string(r.body), `"kubeconfig"`) || !strings.Contains(string(r.body), c.want) {
			t.Errorf("%s: got %s, want a kubeconfig problem saying %q", c.name, r.body, c.want)
		}
	}
	wantStatus(t, s.call(t, "GET", api, root, nil), http.StatusNotFound)

	// The page takes it pasted, checks it with the API server and shows what it said.
	r = s.submit(t, page, root, url.Values{"kubeconfig": {string(plane.Kubeconfig())}})
	wantStatus(t, r, http.StatusSeeOther)
	if loc := r.header.Get("Location"); loc != page+"?saved=1" {
		t.Fatalf("saving sends to %q", loc)
	}
	r = s.call(t, "GET", page+"?saved=1", root, nil)
	wantStatus(t, r, http.StatusOK)
	wantIn(t, r, `data-testid="cluster-saved"`, plane.URL, `data-testid="cluster-version">v1.37.2<`, `data-testid="cluster-user">admin<`)
	if strings.Contains(string(r.body), plane.Token) {
		t.Fatal("the page shows the cluster's token")
	}
	got := s.call(t, "GET", api, root, nil).json(t)
	if got["version"] != "v1.37.2" || got["server"] != plane.URL || got["signed_in_as"] != "admin" {
		t.Fatalf("the zone's cluster: %v", got)
	}
	wantStatus(t, s.call(t, "POST", api+"/check", root, nil), http.StatusOK)

	// Tenants see none of it.
	wantStatus(t, s.call(t, "GET", api, tenantAdmin, nil), http.StatusNotFound)
	wantStatus(t, s.call(t, "GET", page, tenantAdmin, nil), http.StatusNotFound)
	wantStatus(t, s.call(t, "PUT", api, tenantAdmin, map[string]any{"kubeconfig": string(plane.Kubeconfig())}), http.StatusNotFound)

	// The token is sealed: in no table in the clear.
	if where := s.tablesHolding(t, plane.Token); len(where) > 0 {
		t.Fatalf("the cluster's token is in the clear in %v", where)
	}

	// A cluster that stops answering is said to, and keeps its last check.
	plane.Stop()
	r = s.call(t, "POST", api+"/check", root, nil)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantIn(t, r, "cannot reach")
	wantStatus(t, s.call(t, "DELETE", api, root, nil), http.StatusNoContent)
	wantStatus(t, s.call(t, "GET", api, root, nil), http.StatusNotFound)
}

// kubeGet reads an object from the plane's API server as its admin: its JSON, or nil when it
// is not there.
func kubeGet(t *testing.T, plane *kubeplane.Plane, path string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest("GET", plane.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+plane.Token)
	resp, err := plane.Client().Do(req)
	must(t, err)
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil
	}
	var out map[string]any
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", path, resp.Status)
	}
	must(t, json.NewDecoder(resp.Body).Decode(&out))
	return out
}

// A Kubernetes zone's system service is deployed on its cluster with the zone's kubeconfig,
// which reaches the engine sealed; a tenant's Kubernetes deployment does not get it.
func TestCluster_ASystemServiceIsDeployedOnTheZonesCluster(t *testing.T) {
	plane := kubePlane(t)
	s := newSite(t)
	ids := builtinIDs(t, s)
	root := s.token(t, s.admin)
	r := s.call(t, "POST", "/api/v1/landing-zones", root, map[string]any{"name": "k8s", "provider": "kubernetes"})
	wantStatus(t, r, http.StatusCreated)
	zone := r.json(t)["id"].(string)
	wantStatus(t, s.call(t, "POST", "/api/v1/landing-zones/"+zone+"/system-services", root, map[string]any{
		"component_id": ids["k8s-namespace"], "name": "platform", "parameters": map[string]any{"name": "platform", "pod_security": "baseline"}}), http.StatusCreated)
	r = s.call(t, "POST", "/api/v1/landing-zones/"+zone+"/publish", root, nil)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantIn(t, r, `"field":"cluster"`, "has no Kubernetes cluster")
	wantStatus(t, s.call(t, "PUT", "/api/v1/landing-zones/"+zone+"/cluster", root, map[string]any{"kubeconfig": string(plane.Kubeconfig())}), http.StatusOK)
	wantStatus(t, s.call(t, "POST", "/api/v1/landing-zones/"+zone+"/publish", root, nil), http.StatusAccepted)
	if z := s.waitZoneServices(t, root, zone); z["system_status"] != "active" {
		t.Fatalf("after publishing: %v", z)
	}
	ns := kubeGet(t, plane, "/api/v1/namespaces/platform")
	if ns == nil {
		t.Fatal("the API server has no namespace platform")
	}
	labels := ns["metadata"].(map[string]any)["labels"].(map[string]any)
	if labels["pod-security.kubernetes.io/enforce"] != "baseline" || labels["app.kubernetes.io/managed-by"] != "nimbus" {
		t.Fatalf("the namespace's labels: %v", labels)
	}

	// The provider sizes the namespace and closes its network, beside the system service.
	sysEnv := s.call(t, "GET", "/api/v1/landing-zones/"+zone, root, nil).json(t)["system_environment_id"].(string)
	var provisioned []string
	for _, d := range []struct {
		component string
		params    map[string]any
	}{
		{"k8s-quota", map[string]any{"namespace": "platform", "tier": "medium", "cpu": "4", "memory": "8Gi", "pods": "40"}},
		{"k8s-network-policy", map[string]any{"namespace": "platform"}},
	} {
		r := s.call(t, "POST", "/api/v1/deployments", root, map[string]any{"component_id": ids[d.component], "environment_id": sysEnv,
			"name": d.component, "parameters": d.params})
		wantStatus(t, r, http.StatusAccepted)
		body := r.json(t)
		if op := s.waitOperation(t, root, body["operation"].(map[string]any)["id"].(string)); op["status"] != "succeeded" {
			t.Fatalf("deploying %s: %v", d.component, op)
		}
		provisioned = append(provisioned, body["deployment"].(map[string]any)["id"].(string))
	}
	quota := kubeGet(t, plane, "/api/v1/namespaces/platform/resourcequotas/tier")
	if quota == nil {
		t.Fatal("no quota in the namespace")
	}
	hard := quota["spec"].(map[string]any)["hard"].(map[string]any)
	if hard["limits.cpu"] != "4" || hard["requests.memory"] != "8Gi" || hard["pods"] != "40" ||
		quota["metadata"].(map[string]any)["labels"].(map[string]any)["nimbus.io/tier"] != "medium" {
		t.Fatalf("the quota: %v", quota)
	}
	if kubeGet(t, plane, "/api/v1/namespaces/platform/limitranges/tier") == nil {
		t.Fatal("no limit range in the namespace")
	}
	deny := kubeGet(t, plane, "/apis/networking.k8s.io/v1/namespaces/platform/networkpolicies/deny-all")
	if deny == nil || fmt.Sprint(deny["spec"].(map[string]any)["policyTypes"]) != "[Ingress Egress]" {
		t.Fatalf("the deny-all policy: %v", deny)
	}
	if kubeGet(t, plane, "/apis/networking.k8s.io/v1/namespaces/platform/networkpolicies/allow-namespace-dns-ingress") == nil {
		t.Fatal("no allowances policy")
	}

	// The cluster's token went to the engine sealed: nowhere in the clear.
	if where := s.tablesHolding(t, plane.Token); len(where) > 0 {
		t.Errorf("the cluster's token is in the clear in %v", where)
	}
	if strings.Contains(s.logs.String(), plane.Token) {
		t.Error("the server's log holds the cluster's token")
	}
	files := 0
	must(t, filepath.WalkDir(s.data, func(path string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		files++
		if strings.Contains(readFile(t, path), plane.Token) {
			t.Errorf("%s holds the cluster's token", strings.TrimPrefix(path, s.data))
		}
		return nil
	}))
	if files == 0 {
		t.Fatal("no state or work files to look through")
	}

	// A tenant's deployment of a Kubernetes component is not given the zone's kubeconfig.
	env, err := environment.NewService(s.pool).Create(t.Context(), s.adminA, s.a.ID, "dev")
	must(t, err)
	_, err = s.pool.Exec(t.Context(), `UPDATE environments SET landing_zone_id = $1 WHERE id = $2`, zone, env.ID)
	must(t, err)
	admin := s.token(t, s.adminA)
	r = s.call(t, "POST", "/api/v1/deployments", admin, map[string]any{"component_id": ids["k8s-namespace"], "environment_id": env.ID,
		"name": "mine", "parameters": map[string]any{"name": "mine"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantIn(t, r, `"field":"component_id"`, "tenant factory")
	if kubeGet(t, plane, "/api/v1/namespaces/mine") != nil {
		t.Fatal("the tenant's namespace was made with the zone's credentials")
	}

	// Retiring the zone takes its system service off the cluster.
	_, err = s.pool.Exec(t.Context(), `UPDATE environments SET landing_zone_id = NULL WHERE id = $1`, env.ID)
	must(t, err)
	// A published zone keeps its cluster: its deployments are changed and destroyed with it.
	r = s.call(t, "DELETE", "/api/v1/landing-zones/"+zone+"/cluster", root, nil)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantIn(t, r, "is published")
	for _, id := range provisioned {
		r := s.call(t, "POST", "/api/v1/deployments/"+id+"/destroy", root, nil)
		wantStatus(t, r, http.StatusAccepted)
		if op := s.waitOperation(t, root, r.json(t)["id"].(string)); op["status"] != "succeeded" {
			t.Fatalf("destroying: %v", op)
		}
	}
	if kubeGet(t, plane, "/api/v1/namespaces/platform/resourcequotas/tier") != nil {
		t.Fatal("the quota is still there")
	}
	wantStatus(t, s.call(t, "POST", "/api/v1/landing-zones/"+zone+"/retire", root, nil), http.StatusAccepted)
	if z := s.waitZoneServices(t, root, zone); z["system_status"] != "decommissioned" {
		t.Fatalf("after retiring: %v", z)
	}
	if ns := kubeGet(t, plane, "/api/v1/namespaces/platform"); ns != nil {
		t.Fatalf("the namespace is still there: %v", ns["status"])
	}
}
