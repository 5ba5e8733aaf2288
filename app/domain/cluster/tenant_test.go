package cluster_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/apptest"
	"nimbus/app/domain/cluster"
	"nimbus/app/orchestration/environment"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/e2e/kubeplane"
)

// kubeSend sends an object to the plane's API server as its admin and wants it made, or taken
// away when method is DELETE.
func kubeSend(t *testing.T, plane *kubeplane.Plane, method, path string, obj any) {
	t.Helper()
	var body []byte
	if obj != nil {
		body, _ = json.Marshal(obj)
	}
	req, _ := http.NewRequest(method, plane.URL+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+plane.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := plane.Client().Do(req)
	apptest.Must(t, err)
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		var answer bytes.Buffer
		_, _ = answer.ReadFrom(resp.Body)
		t.Fatalf("%s %s: %s %s", method, path, resp.Status, answer.String())
	}
}

type kubeObject = map[string]any

// tenantAccount makes what the tenant factory makes for a tenant on the cluster: its
// namespace, the account its deploys use and a role in that namespace alone (the usual objects
// of an application, every verb; the namespace's quota, limits and network policies, only read;
// nothing of RBAC), bound to the account.
func tenantAccount(t *testing.T, plane *kubeplane.Plane, ns string) {
	t.Helper()
	kubeSend(t, plane, "POST", "/api/v1/namespaces", kubeObject{"apiVersion": "v1", "kind": "Namespace", "metadata": kubeObject{"name": ns}})
	kubeSend(t, plane, "POST", "/api/v1/namespaces/"+ns+"/serviceaccounts", kubeObject{"apiVersion": "v1", "kind": "ServiceAccount",
		"metadata": kubeObject{"name": cluster.TenantAccount}})
	all := []string{"*"}
	read := []string{"get", "list", "watch"}
	kubeSend(t, plane, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/"+ns+"/roles", kubeObject{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": kubeObject{"name": cluster.TenantAccount},
		"rules": []kubeObject{
			{"apiGroups": []string{""}, "resources": []string{"configmaps", "secrets", "services", "pods", "persistentvolumeclaims"}, "verbs": all},
			{"apiGroups": []string{"apps"}, "resources": []string{"deployments", "statefulsets"}, "verbs": all},
			{"apiGroups": []string{"networking.k8s.io"}, "resources": []string{"ingresses"}, "verbs": all},
			{"apiGroups": []string{""}, "resources": []string{"resourcequotas", "limitranges"}, "verbs": read},
			{"apiGroups": []string{"networking.k8s.io"}, "resources": []string{"networkpolicies"}, "verbs": read},
		}})
	kubeSend(t, plane, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/"+ns+"/rolebindings", kubeObject{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": kubeObject{"name": cluster.TenantAccount},
		"roleRef":  kubeObject{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": cluster.TenantAccount},
		"subjects": []kubeObject{{"kind": "ServiceAccount", "name": cluster.TenantAccount, "namespace": ns}}})
}

// Programs that reach past their tenant's namespace.
const (
	foreignConfigMap = `  settings:
    type: kubernetes:core/v1:ConfigMap
    properties:
      metadata:
        name: ${name}
        namespace: globex
      data:
        greeting: hello
`
	clusterNamespace = `  extra:
    type: kubernetes:core/v1:Namespace
    properties:
      metadata:
        name: ${name}
`
	getSecret = `  stolen:
    type: kubernetes:core/v1:Secret
    get:
      id: globex/credentials
outputs:
  stolen: ${stolen.data}
`
	importSecret = `  stolen:
    type: kubernetes:core/v1:Secret
    properties:
      metadata:
        name: credentials
        namespace: globex
    options:
      import: globex/credentials
outputs:
  stolen: ${stolen.data}
`
	adoptNamespace = `  taken:
    type: kubernetes:core/v1:Namespace
    properties:
      metadata:
        name: globex
    options:
      import: globex
`
	getNamespace = `  system:
    type: kubernetes:core/v1:Namespace
    get:
      id: kube-system
outputs:
  uid: ${system.metadata.uid}
`
	importClusterRole = `  admin:
    type: kubernetes:rbac.authorization.k8s.io/v1:ClusterRole
    properties:
      metadata:
        name: cluster-admin
    options:
      import: cluster-admin
outputs:
  rules: ${admin.rules}
`
)

// A tenant's Kubernetes deploys run with a token of the tenant's own account, which RBAC holds
// to the tenant's namespace: what a hostile component tries beyond it, be it the tenant's own
// or a provider's, is refused by the API server, and nothing of the other tenant comes out.
func TestCluster_ATenantsDeploysRunWithItsOwnAccountAndReachNoOtherTenant(t *testing.T) {
	plane := apptest.KubePlane(t)
	s := apptest.NewSite(t)
	ctx := t.Context()
	root, admin, user := s.Token(t, s.Admin), s.Token(t, s.AdminA), s.Token(t, s.UserA)
	r := s.Call(t, "POST", "/api/v1/landing-zones", root, map[string]any{"name": "k8s", "provider": "kubernetes"})
	apptest.WantStatus(t, r, http.StatusCreated)
	zone := uuid.MustParse(r.JSON(t)["id"].(string))
	apptest.WantStatus(t, s.Call(t, "PUT", "/api/v1/landing-zones/"+zone.String()+"/cluster", root, map[string]any{"kubeconfig": string(plane.Kubeconfig())}), http.StatusOK)

	// Tenant A is acme, tenant B globex, each provisioned on the cluster; globex keeps a secret.
	canary := "canary-" + apptest.RandomHex(t)
	for tenant, ns := range map[uuid.UUID]string{s.A.ID: "acme", s.B.ID: "globex"} {
		tenantAccount(t, plane, ns)
		_, err := db.Queries(s.Pool).CreateTenantNamespace(ctx, dbgen.CreateTenantNamespaceParams{TenantID: tenant, LandingZoneID: zone, Namespace: ns})
		apptest.Must(t, err)
	}
	kubeSend(t, plane, "POST", "/api/v1/namespaces/globex/secrets", kubeObject{"apiVersion": "v1", "kind": "Secret",
		"metadata": kubeObject{"name": "credentials"}, "stringData": kubeObject{"password": canary}})
	env, err := environment.NewService(s.Pool).Create(ctx, s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	_, err = s.Pool.Exec(ctx, `UPDATE environments SET landing_zone_id = $1 WHERE id = $2`, zone, env.ID)
	apptest.Must(t, err)
	deploy := func(component, name string) (dep string, op map[string]any) {
		t.Helper()
		r := s.Call(t, "POST", "/api/v1/deployments", user, map[string]any{"component_id": component, "environment_id": env.ID,
			"name": name, "parameters": map[string]any{"name": name}})
		apptest.WantStatus(t, r, http.StatusAccepted)
		body := r.JSON(t)
		return body["deployment"].(map[string]any)["id"].(string), s.WaitOperation(t, user, body["operation"].(map[string]any)["id"].(string))
	}
	account := "system:serviceaccount:acme:" + cluster.TenantAccount
	var outputs []string // everything the tenant was shown
	seen := func(dep string, op map[string]any) {
		id := op["id"].(string)
		outputs = append(outputs, string(s.Call(t, "GET", "/api/v1/operations/"+id, user, nil).Body),
			string(s.Call(t, "GET", "/api/v1/operations/"+id+"/logs", user, nil).Body),
			string(s.Call(t, "GET", "/api/v1/deployments/"+dep, user, nil).Body))
	}

	// What names no namespace lands in acme's.
	appConfig := apptest.KubeComponent(t, s, s.AdminA, &s.A.ID, "app-config", `  settings:
    type: kubernetes:core/v1:ConfigMap
    properties:
      metadata:
        name: ${name}
      data:
        greeting: hello
`)
	mine, op := deploy(appConfig, "settings")
	seen(mine, op)
	if op["status"] != "succeeded" {
		t.Fatalf("deploying a config map into the tenant's namespace: %v", op)
	}
	if cm := apptest.KubeGet(t, plane, "/api/v1/namespaces/acme/configmaps/settings"); cm == nil || cm["data"].(map[string]any)["greeting"] != "hello" {
		t.Fatalf("acme's config map: %v", cm)
	}

	// A preview's plan holds when it is carried out with the token issued for the apply.
	r = s.Call(t, "POST", "/api/v1/deployments", user, map[string]any{"component_id": appConfig, "environment_id": env.ID,
		"name": "planned", "parameters": map[string]any{"name": "planned"}, "preview_only": true})
	apptest.WantStatus(t, r, http.StatusAccepted)
	preview := r.JSON(t)["operation"].(map[string]any)["id"].(string)
	if op := s.WaitOperation(t, user, preview); op["status"] != "succeeded" {
		t.Fatalf("previewing: %v", op)
	}
	r = s.Call(t, "POST", "/api/v1/operations/"+preview+"/apply", user, nil)
	apptest.WantStatus(t, r, http.StatusAccepted)
	if op := s.WaitOperation(t, user, r.JSON(t)["id"].(string)); op["status"] != "succeeded" {
		t.Fatalf("applying the preview: %v", op)
	}
	if apptest.KubeGet(t, plane, "/api/v1/namespaces/acme/configmaps/planned") == nil {
		t.Fatal("the applied preview made no config map")
	}

	// What the tenant's own program makes in globex's namespace, or beside every namespace, is
	// refused by RBAC.
	for name, program := range map[string]string{"foreign-config": foreignConfigMap, "own-namespace": clusterNamespace} {
		dep, op := deploy(apptest.KubeComponent(t, s, s.AdminA, &s.A.ID, name, program), name)
		seen(dep, op)
		if op["status"] != "failed" || !strings.Contains(op["error"].(string), "forbidden") || !strings.Contains(op["error"].(string), account) {
			t.Errorf("%s: %v", name, op)
		}
	}
	if apptest.KubeGet(t, plane, "/api/v1/namespaces/globex/configmaps/foreign-config") != nil || apptest.KubeGet(t, plane, "/api/v1/namespaces/own-namespace") != nil {
		t.Fatal("acme made objects beyond its namespace")
	}

	// A tenant's program may not read or adopt what it did not make: the validator refuses it
	// before any engine runs.
	reads := map[string]string{"get-secret": getSecret, "import-secret": importSecret, "adopt-namespace": adoptNamespace,
		"get-namespace": getNamespace, "import-cluster-role": importClusterRole}
	for name, program := range reads {
		r := s.Call(t, "POST", "/api/v1/components", admin, map[string]any{"name": name, "tenant_id": s.A.ID, "provider": "kubernetes",
			"semantic_type": "KubernetesNamespace", "language": "yaml",
			"code":         "name: " + name + "\nruntime: yaml\nconfig:\n  name:\n    type: string\nresources:\n" + program,
			"input_schema": json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`), "output_schema": json.RawMessage(`{"type":"object","properties":{}}`)})
		apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
		apptest.WantIn(t, r, `"rule":"existing_resource"`)
	}

	// A provider's component may, and runs with the tenant's token too: the API server refuses
	// each read (an import reads the object first) as the tenant's account. The YAML engine
	// gives up on a get: of a Kubernetes object before it asks (it takes the object's kind for
	// properties a get: may not have); were it to ask, the API server would refuse it alike.
	for name, program := range reads {
		dep, op := deploy(apptest.KubeComponent(t, s, s.Admin, nil, name, program), name)
		seen(dep, op)
		refused := op["status"] == "failed"
		if strings.HasPrefix(name, "import-") || strings.HasPrefix(name, "adopt-") {
			refused = refused && strings.Contains(op["error"].(string), "forbidden") && strings.Contains(op["error"].(string), account)
		}
		if !refused {
			t.Errorf("%s: %v", name, op)
		}
	}
	if ns := apptest.KubeGet(t, plane, "/api/v1/namespaces/globex"); ns == nil || ns["metadata"].(map[string]any)["labels"].(map[string]any)["app.kubernetes.io/managed-by"] != nil {
		t.Fatalf("globex's namespace: %v", ns)
	}

	// An account gone from the namespace fails the operation saying so; each operation asks
	// for a new token, so the one its deploy used, gone with the account, is not needed again.
	kubeSend(t, plane, "DELETE", "/api/v1/namespaces/acme/serviceaccounts/"+cluster.TenantAccount, nil)
	dep, op := deploy(appConfig, "later")
	seen(dep, op)
	if op["status"] != "failed" || !strings.Contains(op["error"].(string), "no service account "+cluster.TenantAccount) {
		t.Fatalf("deploying without the tenant's account: %v", op)
	}
	kubeSend(t, plane, "POST", "/api/v1/namespaces/acme/serviceaccounts", kubeObject{"apiVersion": "v1", "kind": "ServiceAccount",
		"metadata": kubeObject{"name": cluster.TenantAccount}})
	// The token the deploy used died with the old account; a drift check and a destroy take the
	// one issued for them.
	kubeSend(t, plane, "PUT", "/api/v1/namespaces/acme/configmaps/settings", kubeObject{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": kubeObject{"name": "settings", "namespace": "acme"}, "data": kubeObject{"greeting": "changed by hand"}})
	r = s.Call(t, "POST", "/api/v1/deployments/"+mine+"/drift-checks", user, nil)
	apptest.WantStatus(t, r, http.StatusAccepted)
	if op := s.WaitOperation(t, user, r.JSON(t)["id"].(string)); op["status"] != "succeeded" {
		t.Fatalf("checking drift with a new account's token: %v", op)
	}
	if d := s.WaitDrift(t, user, mine, "drifted"); !strings.Contains(fmt.Sprint(d["drift"]), "data.greeting") {
		t.Fatalf("the drift found: %v", d["drift"])
	}
	r = s.Call(t, "POST", "/api/v1/deployments/"+mine+"/destroy", admin, nil)
	apptest.WantStatus(t, r, http.StatusAccepted)
	if op := s.WaitOperation(t, admin, r.JSON(t)["id"].(string)); op["status"] != "succeeded" {
		t.Fatalf("destroying with a new account's token: %v", op)
	}
	if apptest.KubeGet(t, plane, "/api/v1/namespaces/acme/configmaps/settings") != nil {
		t.Fatal("acme's config map is still there")
	}

	// Nothing of globex came out, and neither the zone's token nor a tenant's is kept: service
	// account tokens are JWTs, whose header starts {"alg":.
	jwt := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"`))[:10]
	secrets := map[string]string{"globex's secret": canary, "globex's secret, encoded": base64.StdEncoding.EncodeToString([]byte(canary)),
		"the zone's token": plane.Token, "a service account token": jwt}
	for what, value := range secrets {
		if where := s.TablesHolding(t, value); len(where) > 0 {
			t.Errorf("%s is in %v", what, where)
		}
		if strings.Contains(s.Logs.String(), value) {
			t.Errorf("the server's log holds %s", what)
		}
		for _, out := range outputs {
			if strings.Contains(out, value) {
				t.Errorf("the tenant was shown %s: %.2000s", what, out)
			}
		}
	}
	files := 0
	apptest.Must(t, filepath.WalkDir(s.Data, func(path string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		files++
		for what, value := range secrets {
			if strings.Contains(apptest.ReadFile(t, path), value) {
				t.Errorf("%s holds %s", strings.TrimPrefix(path, s.Data), what)
			}
		}
		return nil
	}))
	if files == 0 {
		t.Fatal("no state or work files to look through")
	}
}
