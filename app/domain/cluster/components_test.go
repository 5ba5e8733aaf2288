package cluster_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"nimbus/app/apptest"
	"nimbus/e2e/kubeplane"
)

// kubeCall sends a request to the plane's API server with token and returns its status and
// JSON answer.
func kubeCall(t *testing.T, plane *kubeplane.Plane, token, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var raw []byte
	if body != nil {
		var err error
		raw, err = json.Marshal(body)
		apptest.Must(t, err)
	}
	req, err := http.NewRequest(method, plane.URL+path, bytes.NewReader(raw))
	apptest.Must(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := plane.Client().Do(req)
	apptest.Must(t, err)
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// The tenant factory's parts on a real API server: a namespace with the labels and
// annotations given beside its own, a Secret whose provisioned password is secret everywhere
// Nimbus keeps it, a TLS Ingress, and a tenant account held to its namespace.
func TestCluster_TheTenantFactorysComponentsOnARealAPIServer(t *testing.T) {
	plane := apptest.KubePlane(t)
	s := apptest.NewSite(t)
	ids := apptest.BuiltinIDs(t, s)
	root := s.Token(t, s.Admin)
	r := s.Call(t, "POST", "/api/v1/landing-zones", root, map[string]any{"name": "k8s", "provider": "kubernetes"})
	apptest.WantStatus(t, r, http.StatusCreated)
	zone := r.JSON(t)["id"].(string)
	apptest.WantStatus(t, s.Call(t, "PUT", "/api/v1/landing-zones/"+zone+"/cluster", root, map[string]any{"kubeconfig": string(plane.Kubeconfig())}), http.StatusOK)
	// A label the namespace sets itself is refused by its key, as a system service as anywhere.
	r = s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/system-services", root, map[string]any{"component_id": ids["k8s-namespace"], "name": "other",
		"parameters": map[string]any{"name": "other", "labels": map[string]any{"app.kubernetes.io/managed-by": "me", "team": "blue"}}})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantIn(t, r, `.labels.app.kubernetes.io/managed-by"`, "sets itself")
	namespace := map[string]any{"name": "acme", "pod_security": "baseline",
		"labels": map[string]any{"team": "blue", "app.kubernetes.io/part-of": "acme"}, "annotations": map[string]any{"nimbus.io/owner": "acme admins"}}
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/system-services", root, map[string]any{
		"component_id": ids["k8s-namespace"], "name": "acme", "parameters": namespace}), http.StatusCreated)
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/publish", root, nil), http.StatusAccepted)
	if z := s.WaitZoneServices(t, root, zone); z["system_status"] != "active" {
		t.Fatalf("after publishing: %v", z)
	}
	meta := apptest.KubeGet(t, plane, "/api/v1/namespaces/acme")["metadata"].(map[string]any)
	labels, annotations := meta["labels"].(map[string]any), meta["annotations"].(map[string]any)
	if labels["team"] != "blue" || labels["app.kubernetes.io/part-of"] != "acme" || labels["app.kubernetes.io/managed-by"] != "nimbus" ||
		labels["pod-security.kubernetes.io/enforce"] != "baseline" || annotations["nimbus.io/owner"] != "acme admins" {
		t.Fatalf("the namespace's labels %v and annotations %v", labels, annotations)
	}

	sysEnv := s.Call(t, "GET", "/api/v1/landing-zones/"+zone, root, nil).JSON(t)["system_environment_id"].(string)
	deploy := func(component string, params map[string]any) (apptest.Reply, string) {
		t.Helper()
		r := s.Call(t, "POST", "/api/v1/deployments", root, map[string]any{"component_id": ids[component], "environment_id": sysEnv,
			"name": component, "parameters": params})
		if r.Status != http.StatusAccepted {
			return r, ""
		}
		return r, r.JSON(t)["deployment"].(map[string]any)["id"].(string)
	}
	// A label the namespace sets itself is refused by its key.
	r, _ = deploy("k8s-namespace", map[string]any{"name": "other", "labels": map[string]any{"pod-security.kubernetes.io/enforce": "privileged"}})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantIn(t, r, `"field":"parameters.labels.pod-security.kubernetes.io/enforce"`, "sets itself")

	apptest.WantStatus(t, s.Call(t, "PUT", "/api/v1/environments/"+sysEnv+"/resolvers/secret_provisioner", root, `{"length": 32}`), http.StatusOK)
	deployments := map[string]string{}
	for _, d := range []struct {
		component string
		params    map[string]any
	}{
		{"k8s-secret", map[string]any{"namespace": "acme"}},
		{"k8s-ingress", map[string]any{"namespace": "acme", "host": "acme.apps.example.com", "service": "web", "port": 8080, "cluster_issuer": "letsencrypt"}},
		{"k8s-tenant-access", map[string]any{"namespace": "acme"}},
	} {
		r, id := deploy(d.component, d.params)
		apptest.WantStatus(t, r, http.StatusAccepted)
		deployments[d.component] = id
		if op := s.WaitOperation(t, root, r.JSON(t)["operation"].(map[string]any)["id"].(string)); op["status"] != "succeeded" {
			t.Fatalf("deploying %s: %v", d.component, op)
		}
	}
	outputs := func(component string) map[string]any {
		t.Helper()
		out, _ := s.Call(t, "GET", "/api/v1/deployments/"+deployments[component], root, nil).JSON(t)["outputs"].(map[string]any)
		return out
	}

	// The Secret holds the provisioned password, which is in no table, output or state in the clear.
	secret := apptest.KubeGet(t, plane, "/api/v1/namespaces/acme/secrets/tenant-credentials")
	if secret == nil {
		t.Fatal("no Secret tenant-credentials")
	}
	data := secret["data"].(map[string]any)
	password, err := base64.StdEncoding.DecodeString(data["password"].(string))
	apptest.Must(t, err)
	if user, _ := base64.StdEncoding.DecodeString(data["username"].(string)); len(password) != 32 || string(user) != "tenant" {
		t.Fatalf("the Secret's data: user %q, a password of %d characters", user, len(password))
	}
	if where := s.TablesHolding(t, string(password)); len(where) > 0 {
		t.Errorf("the password is in the clear in %v", where)
	}
	if strings.Contains(s.Logs.String(), string(password)) {
		t.Error("the server's log holds the password")
	}
	if out := outputs("k8s-secret"); out["name"] != "tenant-credentials" || out["namespace"] != "acme" || strings.Contains(fmt.Sprint(out), string(password)) {
		t.Errorf("the secret's outputs: %v", out)
	}
	r = s.Call(t, "GET", "/api/v1/deployments/"+deployments["k8s-secret"]+"/state", root, nil)
	apptest.WantStatus(t, r, http.StatusOK)
	if strings.Contains(string(r.Body), string(password)) || strings.Contains(string(r.Body), data["password"].(string)) {
		t.Error("the exported state holds the password in the clear")
	}
	var state struct {
		Deployment struct {
			Resources []struct {
				Type    string         `json:"type"`
				Inputs  map[string]any `json:"inputs"`
				Outputs map[string]any `json:"outputs"`
			} `json:"resources"`
		} `json:"deployment"`
	}
	apptest.Must(t, json.Unmarshal(r.Body, &state))
	found := false
	for _, res := range state.Deployment.Resources {
		if res.Type == "kubernetes:core/v1:Secret" {
			// The provider turns stringData into data before it keeps its inputs.
			found = true
			for what, value := range map[string]any{"input data": res.Inputs["data"], "output data": res.Outputs["data"]} {
				if sealed, _ := value.(map[string]any); sealed["ciphertext"] == nil {
					t.Errorf("the Secret's %s is not secret in the state: %v", what, value)
				}
			}
		}
	}
	if !found {
		t.Error("no Secret in the exported state")
	}

	// The Ingress serves its host over TLS, with cert-manager's issuer named.
	ingress := apptest.KubeGet(t, plane, "/apis/networking.k8s.io/v1/namespaces/acme/ingresses/tenant")
	if ingress == nil {
		t.Fatal("no Ingress tenant")
	}
	spec := ingress["spec"].(map[string]any)
	tls := spec["tls"].([]any)[0].(map[string]any)
	rule := spec["rules"].([]any)[0].(map[string]any)
	backend := rule["http"].(map[string]any)["paths"].([]any)[0].(map[string]any)["backend"].(map[string]any)["service"].(map[string]any)
	ingressNotes := ingress["metadata"].(map[string]any)["annotations"].(map[string]any)
	if fmt.Sprint(tls["hosts"]) != "[acme.apps.example.com]" || tls["secretName"] != "tenant-tls" || rule["host"] != "acme.apps.example.com" ||
		backend["name"] != "web" || backend["port"].(map[string]any)["number"] != 8080.0 ||
		ingressNotes["cert-manager.io/cluster-issuer"] != "letsencrypt" || ingressNotes["pulumi.com/skipAwait"] != "true" {
		t.Fatalf("the Ingress: %v, annotations %v", spec, ingressNotes)
	}
	if out := outputs("k8s-ingress"); out["host"] != "acme.apps.example.com" || out["tls"] != true {
		t.Errorf("the ingress's outputs: %v", out)
	}

	// The tenant's account may manage its namespace's objects and nothing else.
	if out := outputs("k8s-tenant-access"); out["namespace"] != "acme" || out["service_account"] != "nimbus-tenant" {
		t.Errorf("the access's outputs: %v", out)
	}
	role := apptest.KubeGet(t, plane, "/apis/rbac.authorization.k8s.io/v1/namespaces/acme/roles/nimbus-tenant")
	if role == nil {
		t.Fatal("no Role nimbus-tenant")
	}
	granted := map[string][]string{} // group/resource: verbs
	for _, rl := range role["rules"].([]any) {
		rl := rl.(map[string]any)
		for _, g := range rl["apiGroups"].([]any) {
			for _, res := range rl["resources"].([]any) {
				for _, v := range rl["verbs"].([]any) {
					granted[g.(string)+"/"+res.(string)] = append(granted[g.(string)+"/"+res.(string)], v.(string))
				}
			}
		}
	}
	for _, res := range []string{"/configmaps", "/secrets", "/services", "/serviceaccounts", "/persistentvolumeclaims", "/pods",
		"apps/deployments", "apps/statefulsets", "apps/daemonsets", "apps/replicasets", "batch/jobs", "batch/cronjobs",
		"networking.k8s.io/ingresses", "autoscaling/horizontalpodautoscalers", "policy/poddisruptionbudgets"} {
		if fmt.Sprint(granted[res]) != "[*]" {
			t.Errorf("%s: verbs %v, want all", res, granted[res])
		}
		delete(granted, res)
	}
	for _, res := range []string{"/resourcequotas", "/limitranges", "networking.k8s.io/networkpolicies"} {
		if v := granted[res]; !slices.Equal(v, []string{"get", "list", "watch"}) {
			t.Errorf("%s: verbs %v, want only reading", res, v)
		}
		delete(granted, res)
	}
	if len(granted) > 0 {
		t.Errorf("the Role grants more: %v", granted)
	}
	binding := apptest.KubeGet(t, plane, "/apis/rbac.authorization.k8s.io/v1/namespaces/acme/rolebindings/nimbus-tenant")
	subject := binding["subjects"].([]any)[0].(map[string]any)
	if subject["kind"] != "ServiceAccount" || subject["name"] != "nimbus-tenant" || subject["namespace"] != "acme" ||
		binding["roleRef"].(map[string]any)["name"] != "nimbus-tenant" {
		t.Fatalf("the RoleBinding: %v", binding)
	}
	status, tr := kubeCall(t, plane, plane.Token, "POST", "/api/v1/namespaces/acme/serviceaccounts/nimbus-tenant/token",
		map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": map[string]any{"expirationSeconds": 600}})
	if status != http.StatusCreated {
		t.Fatalf("a token for the account: %d %v", status, tr)
	}
	token := tr["status"].(map[string]any)["token"].(string)
	configMap := func(ns string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "settings", "namespace": ns}, "data": map[string]any{"a": "b"}}
	}
	for _, c := range []struct {
		what, method, path string
		body               any
		want               int
	}{
		{"make a ConfigMap in its namespace", "POST", "/api/v1/namespaces/acme/configmaps", configMap("acme"), http.StatusCreated},
		{"read its quota", "GET", "/api/v1/namespaces/acme/resourcequotas", nil, http.StatusOK},
		{"make a ConfigMap in another namespace", "POST", "/api/v1/namespaces/default/configmaps", configMap("default"), http.StatusForbidden},
		{"list namespaces", "GET", "/api/v1/namespaces", nil, http.StatusForbidden},
		{"read the other namespace's Secrets", "GET", "/api/v1/namespaces/default/secrets", nil, http.StatusForbidden},
		{"give itself a Role", "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/acme/roles", map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1",
			"kind": "Role", "metadata": map[string]any{"name": "more"}, "rules": []any{}}, http.StatusForbidden},
		{"lift its network policy", "DELETE", "/apis/networking.k8s.io/v1/namespaces/acme/networkpolicies/deny-all", nil, http.StatusForbidden},
		{"change its own namespace", "PATCH", "/api/v1/namespaces/acme", nil, http.StatusForbidden},
	} {
		if status, body := kubeCall(t, plane, token, c.method, c.path, c.body); status != c.want {
			t.Errorf("the tenant's account may %s: %d, want %d (%v)", c.what, status, c.want, body["message"])
		}
	}

	// Labels taken out of the map are taken off the namespace; its own stay.
	var nsDeployment string
	apptest.Must(t, s.Pool.QueryRow(t.Context(), `SELECT id::text FROM deployed_components WHERE environment_id = $1 AND name = 'acme'`, sysEnv).Scan(&nsDeployment))
	r = s.Call(t, "POST", "/api/v1/deployments/"+nsDeployment+"/update", root, map[string]any{"parameters": map[string]any{"labels": map[string]any{"team": "green"}}})
	apptest.WantStatus(t, r, http.StatusAccepted)
	if op := s.WaitOperation(t, root, r.JSON(t)["id"].(string)); op["status"] != "succeeded" {
		t.Fatalf("changing the labels: %v", op)
	}
	labels = apptest.KubeGet(t, plane, "/api/v1/namespaces/acme")["metadata"].(map[string]any)["labels"].(map[string]any)
	if labels["team"] != "green" || labels["app.kubernetes.io/part-of"] != nil || labels["pod-security.kubernetes.io/enforce"] != "baseline" {
		t.Fatalf("the namespace's labels after the change: %v", labels)
	}
}
