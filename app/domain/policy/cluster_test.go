package policy_test

import (
	"net/http"
	"strings"
	"testing"

	"nimbus/app/apptest"
)

// Policies read a Kubernetes plan as the provider plans it: its type tokens and the inputs
// of each object. A namespace planned without a quota is refused before the API server hears
// of it; as advice, the namespace is made and the advice shown.
func TestPolicy_OnAKubernetesZoneTheNamespaceIsRefusedBeforeTheAPIServerHearsOfIt(t *testing.T) {
	plane := apptest.KubePlane(t)
	s := apptest.NewSite(t)
	ids := apptest.BuiltinIDs(t, s)
	root := s.Token(t, s.Admin)
	r := s.Call(t, "POST", "/api/v1/landing-zones", root, map[string]any{"name": "k8s", "provider": "kubernetes"})
	apptest.WantStatus(t, r, http.StatusCreated)
	zone := r.JSON(t)["id"].(string)
	apptest.WantStatus(t, s.Call(t, "PUT", "/api/v1/landing-zones/"+zone+"/cluster", root, map[string]any{"kubeconfig": string(plane.Kubeconfig())}), http.StatusOK)
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/publish", root, nil), http.StatusAccepted)
	if z := s.WaitZoneServices(t, root, zone); z["system_status"] != "active" {
		t.Fatalf("after publishing: %v", z)
	}
	sysEnv := s.Call(t, "GET", "/api/v1/landing-zones/"+zone, root, nil).JSON(t)["system_environment_id"].(string)
	policies := "/api/v1/landing-zones/" + zone + "/policies"
	r = s.Call(t, "POST", policies, root, map[string]any{"name": "namespace-has-quota", "level": "mandatory",
		"message":    "every Namespace has a ResourceQuota in the same plan",
		"expression": `resource.type != "kubernetes:core/v1:Namespace" || plan.exists(r, r.type == "kubernetes:core/v1:ResourceQuota")`})
	apptest.WantStatus(t, r, http.StatusCreated)
	quota := r.JSON(t)["id"].(string)

	deploy := func(name, level string, previewOnly bool) map[string]any {
		t.Helper()
		r := s.Call(t, "POST", "/api/v1/deployments", root, map[string]any{"component_id": ids["k8s-namespace"], "environment_id": sysEnv,
			"name": name, "parameters": map[string]any{"name": name, "pod_security": level}, "preview_only": previewOnly})
		apptest.WantStatus(t, r, http.StatusAccepted)
		return s.WaitOperation(t, root, r.JSON(t)["operation"].(map[string]any)["id"].(string))
	}
	op := deploy("lonely", "restricted", false)
	if op["status"] != "failed" || !strings.Contains(op["error"].(string), "every Namespace has a ResourceQuota in the same plan") ||
		!strings.Contains(op["error"].(string), "kubernetes:core/v1:Namespace namespace") {
		t.Fatalf("a namespace without a quota: %v %v", op["status"], op["error"])
	}
	if apptest.KubeGet(t, plane, "/api/v1/namespaces/lonely") != nil {
		t.Fatal("the refused namespace is on the API server")
	}

	// As advice, with a second policy over the namespace's labels: the namespace is made, through
	// the plan that was checked, and the advice shown.
	apptest.WantStatus(t, s.Call(t, "PUT", policies+"/"+quota, root, map[string]any{"name": "namespace-has-quota", "level": "advisory",
		"message":    "every Namespace has a ResourceQuota in the same plan",
		"expression": `resource.type != "kubernetes:core/v1:Namespace" || plan.exists(r, r.type == "kubernetes:core/v1:ResourceQuota")`}), http.StatusOK)
	apptest.WantStatus(t, s.Call(t, "POST", policies, root, map[string]any{"name": "restricted-pods", "level": "advisory",
		"message":    "namespaces enforce the restricted Pod Security level",
		"expression": `resource.type != "kubernetes:core/v1:Namespace" || resource.inputs.metadata.labels["pod-security.kubernetes.io/enforce"] == "restricted"`}),
		http.StatusCreated)
	op = deploy("shared", "baseline", false)
	if op["status"] != "succeeded" {
		t.Fatalf("a deploy against advice: %v", op["error"])
	}
	version, violations := check(t, op)
	var failed []string
	for _, v := range violations {
		failed = append(failed, v["policy"].(string)+" "+v["type"].(string)+" "+v["name"].(string))
	}
	if version != 3 || strings.Join(failed, ",") != "namespace-has-quota kubernetes:core/v1:Namespace namespace,restricted-pods kubernetes:core/v1:Namespace namespace" {
		t.Fatalf("checked against version %v: %v", version, failed)
	}
	if apptest.KubeGet(t, plane, "/api/v1/namespaces/shared") == nil {
		t.Fatal("the namespace deployed against advice is not on the API server")
	}
}
