package cluster_test

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/domain/cluster"
	"nimbus/app/orchestration/environment"
)

func TestCluster_AProviderAdminSetsAZonesClusterCheckedByItsAPIServer(t *testing.T) {
	plane := apptest.KubePlane(t)
	s := apptest.NewSite(t)
	root, tenantAdmin := s.Token(t, s.Admin), s.Token(t, s.AdminA)
	r := s.Call(t, "POST", "/api/v1/landing-zones", root, map[string]any{"name": "k8s", "provider": "kubernetes"})
	apptest.WantStatus(t, r, http.StatusCreated)
	zone := r.JSON(t)["id"].(string)
	api, page := "/api/v1/landing-zones/"+zone+"/cluster", "/landing-zones/"+zone+"/cluster"
	r = s.Call(t, "POST", "/api/v1/landing-zones", root, map[string]any{"name": "sim", "provider": "simcloud"})
	apptest.WantStatus(t, r, http.StatusCreated)
	r = s.Call(t, "PUT", "/api/v1/landing-zones/"+r.JSON(t)["id"].(string)+"/cluster", root, map[string]any{"kubeconfig": string(plane.Kubeconfig())})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantIn(t, r, "is for simcloud, not Kubernetes")
	apptest.WantIn(t, s.Call(t, "GET", "/landing-zones/"+zone, root, nil), `href="`+page+`"`)
	apptest.WantStatus(t, s.Call(t, "GET", api, root, nil), http.StatusNotFound)

	// Refused, each with why, and nothing kept.
	for _, c := range []struct {
		name, config, want string
	}{
		{"wrong token", string(plane.KubeconfigWith("not-the-token")), "refused the credentials"},
		{"no server there", string(cluster.Kubeconfig{Server: "https://127.0.0.1:1", CA: plane.CA, Token: plane.Token}.Marshal()), "cannot reach"},
		{"another CA", string(cluster.Kubeconfig{Server: plane.URL, Token: plane.Token}.Marshal()), "certificate"},
		{"exec plugin", strings.Replace(string(plane.Kubeconfig()), "token: "+plane.Token, "exec: {command: /bin/true}", 1), "runs a program"},
	} {
		r := s.Call(t, "PUT", api, root, map[string]any{"kubeconfig": c.config})
		apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
		if !strings.Contains(string(r.Body), `"kubeconfig"`) || !strings.Contains(string(r.Body), c.want) {
			t.Errorf("%s: got %s, want a kubeconfig problem saying %q", c.name, r.Body, c.want)
		}
	}
	apptest.WantStatus(t, s.Call(t, "GET", api, root, nil), http.StatusNotFound)

	// The page takes it pasted, checks it with the API server and shows what it said.
	r = s.Submit(t, page, root, url.Values{"kubeconfig": {string(plane.Kubeconfig())}})
	apptest.WantStatus(t, r, http.StatusSeeOther)
	if loc := r.Header.Get("Location"); loc != page+"?saved=1" {
		t.Fatalf("saving sends to %q", loc)
	}
	r = s.Call(t, "GET", page+"?saved=1", root, nil)
	apptest.WantStatus(t, r, http.StatusOK)
	apptest.WantIn(t, r, `data-testid="cluster-saved"`, plane.URL, `data-testid="cluster-version">v1.37.2<`, `data-testid="cluster-user">admin<`)
	if strings.Contains(string(r.Body), plane.Token) {
		t.Fatal("the page shows the cluster's token")
	}
	got := s.Call(t, "GET", api, root, nil).JSON(t)
	if got["version"] != "v1.37.2" || got["server"] != plane.URL || got["signed_in_as"] != "admin" {
		t.Fatalf("the zone's cluster: %v", got)
	}
	apptest.WantStatus(t, s.Call(t, "POST", api+"/check", root, nil), http.StatusOK)

	// Tenants see none of it.
	apptest.WantStatus(t, s.Call(t, "GET", api, tenantAdmin, nil), http.StatusNotFound)
	apptest.WantStatus(t, s.Call(t, "GET", page, tenantAdmin, nil), http.StatusNotFound)
	apptest.WantStatus(t, s.Call(t, "PUT", api, tenantAdmin, map[string]any{"kubeconfig": string(plane.Kubeconfig())}), http.StatusNotFound)

	// The token is sealed: in no table in the clear.
	if where := s.TablesHolding(t, plane.Token); len(where) > 0 {
		t.Fatalf("the cluster's token is in the clear in %v", where)
	}

	// A cluster that stops answering is said to, and keeps its last check.
	plane.Stop()
	r = s.Call(t, "POST", api+"/check", root, nil)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantIn(t, r, "cannot reach")
	apptest.WantStatus(t, s.Call(t, "DELETE", api, root, nil), http.StatusNoContent)
	apptest.WantStatus(t, s.Call(t, "GET", api, root, nil), http.StatusNotFound)
}

// A Kubernetes zone's system service is deployed on its cluster with the zone's kubeconfig,
// which reaches the engine sealed; a tenant's Kubernetes deployment does not get it.
func TestCluster_ASystemServiceIsDeployedOnTheZonesCluster(t *testing.T) {
	plane := apptest.KubePlane(t)
	s := apptest.NewSite(t)
	ids := apptest.BuiltinIDs(t, s)
	root := s.Token(t, s.Admin)
	r := s.Call(t, "POST", "/api/v1/landing-zones", root, map[string]any{"name": "k8s", "provider": "kubernetes"})
	apptest.WantStatus(t, r, http.StatusCreated)
	zone := r.JSON(t)["id"].(string)
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/system-services", root, map[string]any{
		"component_id": ids["k8s-namespace"], "name": "platform", "parameters": map[string]any{"name": "platform", "pod_security": "baseline"}}), http.StatusCreated)
	r = s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/publish", root, nil)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantIn(t, r, `"field":"cluster"`, "has no Kubernetes cluster")
	apptest.WantStatus(t, s.Call(t, "PUT", "/api/v1/landing-zones/"+zone+"/cluster", root, map[string]any{"kubeconfig": string(plane.Kubeconfig())}), http.StatusOK)
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/publish", root, nil), http.StatusAccepted)
	if z := s.WaitZoneServices(t, root, zone); z["system_status"] != "active" {
		t.Fatalf("after publishing: %v", z)
	}
	ns := apptest.KubeGet(t, plane, "/api/v1/namespaces/platform")
	if ns == nil {
		t.Fatal("the API server has no namespace platform")
	}
	labels := ns["metadata"].(map[string]any)["labels"].(map[string]any)
	if labels["pod-security.kubernetes.io/enforce"] != "baseline" || labels["app.kubernetes.io/managed-by"] != "nimbus" {
		t.Fatalf("the namespace's labels: %v", labels)
	}

	// The provider sizes the namespace and closes its network, beside the system service.
	sysEnv := s.Call(t, "GET", "/api/v1/landing-zones/"+zone, root, nil).JSON(t)["system_environment_id"].(string)
	var provisioned []string
	for _, d := range []struct {
		component string
		params    map[string]any
	}{
		{"k8s-quota", map[string]any{"namespace": "platform", "tier": "medium", "cpu": "4", "memory": "8Gi", "pods": "40"}},
		{"k8s-network-policy", map[string]any{"namespace": "platform"}},
	} {
		r := s.Call(t, "POST", "/api/v1/deployments", root, map[string]any{"component_id": ids[d.component], "environment_id": sysEnv,
			"name": d.component, "parameters": d.params})
		apptest.WantStatus(t, r, http.StatusAccepted)
		body := r.JSON(t)
		if op := s.WaitOperation(t, root, body["operation"].(map[string]any)["id"].(string)); op["status"] != "succeeded" {
			t.Fatalf("deploying %s: %v", d.component, op)
		}
		provisioned = append(provisioned, body["deployment"].(map[string]any)["id"].(string))
	}
	quota := apptest.KubeGet(t, plane, "/api/v1/namespaces/platform/resourcequotas/tier")
	if quota == nil {
		t.Fatal("no quota in the namespace")
	}
	hard := quota["spec"].(map[string]any)["hard"].(map[string]any)
	if hard["limits.cpu"] != "4" || hard["requests.memory"] != "8Gi" || hard["pods"] != "40" ||
		quota["metadata"].(map[string]any)["labels"].(map[string]any)["nimbus.io/tier"] != "medium" {
		t.Fatalf("the quota: %v", quota)
	}
	if apptest.KubeGet(t, plane, "/api/v1/namespaces/platform/limitranges/tier") == nil {
		t.Fatal("no limit range in the namespace")
	}
	deny := apptest.KubeGet(t, plane, "/apis/networking.k8s.io/v1/namespaces/platform/networkpolicies/deny-all")
	if deny == nil || fmt.Sprint(deny["spec"].(map[string]any)["policyTypes"]) != "[Ingress Egress]" {
		t.Fatalf("the deny-all policy: %v", deny)
	}
	if apptest.KubeGet(t, plane, "/apis/networking.k8s.io/v1/namespaces/platform/networkpolicies/allow-namespace-dns-ingress") == nil {
		t.Fatal("no allowances policy")
	}

	// The cluster's token went to the engine sealed: nowhere in the clear.
	if where := s.TablesHolding(t, plane.Token); len(where) > 0 {
		t.Errorf("the cluster's token is in the clear in %v", where)
	}
	if strings.Contains(s.Logs.String(), plane.Token) {
		t.Error("the server's log holds the cluster's token")
	}
	files := 0
	apptest.Must(t, filepath.WalkDir(s.Data, func(path string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		files++
		if strings.Contains(apptest.ReadFile(t, path), plane.Token) {
			t.Errorf("%s holds the cluster's token", strings.TrimPrefix(path, s.Data))
		}
		return nil
	}))
	if files == 0 {
		t.Fatal("no state or work files to look through")
	}

	// A tenant's deployment of a Kubernetes component is not given the zone's kubeconfig.
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	_, err = s.Pool.Exec(t.Context(), `UPDATE environments SET landing_zone_id = $1 WHERE id = $2`, zone, env.ID)
	apptest.Must(t, err)
	admin := s.Token(t, s.AdminA)
	r = s.Call(t, "POST", "/api/v1/deployments", admin, map[string]any{"component_id": ids["k8s-namespace"], "environment_id": env.ID,
		"name": "mine", "parameters": map[string]any{"name": "mine"}})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantIn(t, r, `"field":"component_id"`, "tenant factory")
	if apptest.KubeGet(t, plane, "/api/v1/namespaces/mine") != nil {
		t.Fatal("the tenant's namespace was made with the zone's credentials")
	}

	// Retiring the zone takes its system service off the cluster.
	_, err = s.Pool.Exec(t.Context(), `UPDATE environments SET landing_zone_id = NULL WHERE id = $1`, env.ID)
	apptest.Must(t, err)
	// A published zone keeps its cluster: its deployments are changed and destroyed with it.
	r = s.Call(t, "DELETE", "/api/v1/landing-zones/"+zone+"/cluster", root, nil)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantIn(t, r, "is published")
	for _, id := range provisioned {
		r := s.Call(t, "POST", "/api/v1/deployments/"+id+"/destroy", root, nil)
		apptest.WantStatus(t, r, http.StatusAccepted)
		if op := s.WaitOperation(t, root, r.JSON(t)["id"].(string)); op["status"] != "succeeded" {
			t.Fatalf("destroying: %v", op)
		}
	}
	if apptest.KubeGet(t, plane, "/api/v1/namespaces/platform/resourcequotas/tier") != nil {
		t.Fatal("the quota is still there")
	}
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/retire", root, nil), http.StatusAccepted)
	if z := s.WaitZoneServices(t, root, zone); z["system_status"] != "decommissioned" {
		t.Fatalf("after retiring: %v", z)
	}
	if ns := apptest.KubeGet(t, plane, "/api/v1/namespaces/platform"); ns != nil {
		t.Fatalf("the namespace is still there: %v", ns["status"])
	}
}
