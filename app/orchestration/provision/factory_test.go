package provision_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/apptest"
	"nimbus/app/orchestration/environment"
)

// quotaHard reads the tenant namespace's quota: its hard limits and its UID.
func quotaHard(t *testing.T, get func(string) map[string]any, ns string) (map[string]any, string) {
	t.Helper()
	q := get("/api/v1/namespaces/" + ns + "/resourcequotas/tier")
	if q == nil {
		t.Fatalf("no quota in namespace %s", ns)
	}
	return q["spec"].(map[string]any)["hard"].(map[string]any), q["metadata"].(map[string]any)["uid"].(string)
}

func TestFactory_CreatingATenantProvisionsItsNamespaceOnTheCluster(t *testing.T) {
	plane := apptest.KubePlane(t)
	s := apptest.NewSite(t)
	root := s.Token(t, s.Admin)
	zone, _ := s.FactoryZone(t, root, plane.Kubeconfig())
	get := func(path string) map[string]any { return apptest.KubeGet(t, plane, path) }

	// A namespace of the cluster's own is refused, and no tenant is left behind.
	r := s.Call(t, "POST", "/api/v1/tenants", root, map[string]any{"name": "Kube", "provision": map[string]any{
		"landing_zone_id": zone, "namespace": "kube-system"}})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantIn(t, r, `"field":"provision.namespace"`, "cluster's own")
	r = s.Call(t, "POST", "/api/v1/tenants", root, map[string]any{"name": "Kube"})
	apptest.WantStatus(t, r, http.StatusCreated)
	// Governance bounds a tenant's tier as it bounds the quota component's, and what the
	// factory works out from the tier too: medium is an allowed tier, but its 40 pods are not.
	kube := r.JSON(t)["id"].(string)
	apptest.WantStatus(t, s.Call(t, "PUT", "/api/v1/tenants/"+kube+"/governance/"+apptest.BuiltinIDs(t, s)["k8s-quota"], root, map[string]any{
		"scope": "provider", "is_allowed": true, "parameter_constraints": map[string]any{
			"tier": map[string]any{"allowed": []string{"small", "medium"}}, "pods": map[string]any{"allowed": []string{"20"}}}}), http.StatusOK)
	r = s.Call(t, "POST", "/api/v1/tenants/"+kube+"/namespaces", root, map[string]any{"landing_zone_id": zone, "tier": "large"})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantIn(t, r, `"field":"tier"`, `\"large\" is not one of the allowed values`, "for the factory's quota")
	r = s.Call(t, "POST", "/api/v1/tenants/"+kube+"/namespaces", root, map[string]any{"landing_zone_id": zone, "tier": "medium"})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantIn(t, r, `"field":"tier"`, `the factory's quota, input pods (from tier \"medium\"): \"40\" is not one of the allowed values (\"20\")`)
	// What comes from another slot is held to the tenant's governance when its slot deploys:
	// the quota's namespace is the namespace slot's output.
	r = s.Call(t, "POST", "/api/v1/tenants", root, map[string]any{"name": "Guarded"})
	apptest.WantStatus(t, r, http.StatusCreated)
	guarded := r.JSON(t)["id"].(string)
	apptest.WantStatus(t, s.Call(t, "PUT", "/api/v1/tenants/"+guarded+"/governance/"+apptest.BuiltinIDs(t, s)["k8s-quota"], root, map[string]any{
		"scope": "provider", "is_allowed": true, "parameter_constraints": map[string]any{"namespace": map[string]any{"pattern": "^team-"}}}), http.StatusOK)
	r = s.Call(t, "POST", "/api/v1/tenants/"+guarded+"/namespaces", root, map[string]any{"landing_zone_id": zone})
	apptest.WantStatus(t, r, http.StatusAccepted)
	if inst := s.WaitInstance(t, root, r.JSON(t)["stack_instance_id"].(string), func(m map[string]any) bool {
		return m["status"] == "failed" && strings.Contains(m["error"].(string), "removed")
	}); !strings.Contains(inst["error"].(string), `parameters.namespace: "guarded" does not match the pattern ^team-`) ||
		!strings.Contains(inst["error"].(string), "(the tenant of namespace guarded)") {
		t.Fatalf("a namespace guarded's governance refuses its quota: %v", inst)
	}
	if get("/api/v1/namespaces/guarded/resourcequotas/tier") != nil {
		t.Fatal("guarded has a quota its governance refuses")
	}
	// A namespace the cluster has already is not taken over.
	r = s.Call(t, "POST", "/api/v1/tenants/"+kube+"/namespaces", root, map[string]any{"landing_zone_id": zone, "namespace": "kube"})
	apptest.WantStatus(t, r, http.StatusAccepted)
	kubeInst := r.JSON(t)["stack_instance_id"].(string)
	s.WaitInstance(t, root, kubeInst, apptest.Status("active"))
	// Nor does a day-2 operation give it a tier its governance refuses: the run stops before the
	// quota is touched, saying why.
	r = s.Call(t, "POST", "/api/v1/stack-instances/"+kubeInst+"/operations/change_tier", root, map[string]any{"inputs": map[string]any{"tier": "large"}})
	apptest.WantStatus(t, r, http.StatusAccepted)
	if run := s.WaitRun(t, root, kubeInst, r.JSON(t)["id"].(string)); run["status"] != "failed" ||
		!strings.Contains(run["error"].(string), "slot quota: invalid input: ") ||
		!strings.Contains(run["error"].(string), `parameters.tier: "large" is not one of the allowed values`) ||
		!strings.Contains(run["error"].(string), `parameters.pods: "80" is not one of the allowed values`) ||
		!strings.Contains(run["error"].(string), "(the tenant of namespace kube)") {
		t.Fatalf("a tier kube's governance refuses, through change_tier: %v", run)
	}
	if hard, _ := quotaHard(t, get, "kube"); hard["pods"] != "20" {
		t.Fatalf("kube's quota after a refused change_tier: %v", hard)
	}
	s.WaitInstance(t, root, kubeInst, apptest.Status("active"))
	r = s.Call(t, "POST", "/api/v1/tenants", root, map[string]any{"name": "Kube!", "provision": map[string]any{"landing_zone_id": zone}})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantIn(t, r, `"field":"provision.namespace"`, "has a namespace kube already")
	// The form says so beside the field, and offers the zone.
	r = s.Submit(t, "/tenants", root, url.Values{"name": {"Kube2"}, "provision.landing_zone_id": {zone}, "provision.namespace": {"default"}})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantIn(t, r, `data-field-error="provision.namespace"`, "k8s (tenant-factory)", ">medium<")

	// The zone's policies see a factory's part with what its other parts declare: each namespace
	// it makes comes with a quota, though the quota is the next part's to plan.
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/policies", root, map[string]any{
		"name": "namespace-quota", "level": "mandatory", "message": "every namespace the factory makes has a quota",
		"expression": `!deployment.system || resource.type != "kubernetes:core/v1:Namespace" || plan.exists(r, r.type == "kubernetes:core/v1:ResourceQuota") ||
			deployment.slot == "namespace" && declared.exists(r, r.type == "kubernetes:core/v1:ResourceQuota" && r.slot == "quota")`,
	}), http.StatusCreated)

	// No engine process is given the cluster's token in its command line or environment.
	stop := apptest.WatchProcesses(plane.Token)
	r = s.Call(t, "POST", "/api/v1/tenants", root, map[string]any{"name": "Acme", "provision": map[string]any{
		"landing_zone_id": zone, "tier": "small"}})
	apptest.WantStatus(t, r, http.StatusCreated)
	tenant := r.JSON(t)["id"].(string)
	spaces := s.NamespacesOf(t, root, tenant)
	if len(spaces) != 1 || spaces[0]["namespace"] != "acme" {
		t.Fatalf("acme's namespaces: %v", spaces)
	}
	inst := spaces[0]["stack_instance_id"].(string)
	s.WaitInstance(t, root, inst, apptest.Status("active", "failed"))
	if check, ok := s.SlotOperations(t, root, inst, "deploy")["namespace"]["policy"].(map[string]any); !ok ||
		check["resources"] != 2.0 || len(check["violations"].([]any)) != 0 {
		t.Fatalf("the policy check of acme's namespace: %v", check)
	}
	s.WaitInstance(t, root, inst, apptest.Status("active"))
	if seen, looks := stop(); len(seen) > 0 || looks < 10 {
		t.Fatalf("in %d looks while the factory ran, the cluster's token was in %v", looks, seen)
	}
	apptest.WantIn(t, s.Call(t, "GET", "/tenants/"+tenant, root, nil), `data-testid="namespace-acme"`, `data-status="active"`)
	apptest.WantIn(t, s.Call(t, "GET", "/landing-zones/"+zone+"/tenant-factory", root, nil), `data-testid="factory-stack"`, "<code>acme</code>")

	ns := get("/api/v1/namespaces/acme")
	if ns == nil || ns["metadata"].(map[string]any)["labels"].(map[string]any)["pod-security.kubernetes.io/enforce"] != "restricted" {
		t.Fatalf("namespace acme: %v", ns)
	}
	hard, uid := quotaHard(t, get, "acme")
	if hard["limits.cpu"] != "2" || hard["requests.memory"] != "4Gi" || hard["pods"] != "20" {
		t.Fatalf("a small tier's quota: %v", hard)
	}
	if get("/api/v1/namespaces/acme/limitranges/tier") == nil || get("/apis/networking.k8s.io/v1/namespaces/acme/networkpolicies/deny-all") == nil {
		t.Fatal("acme has no limit range or no deny-all policy")
	}
	if get("/api/v1/namespaces/acme/serviceaccounts/nimbus-tenant") == nil || get("/apis/rbac.authorization.k8s.io/v1/namespaces/acme/rolebindings/nimbus-tenant") == nil {
		t.Fatal("acme has no account of its own")
	}
	ingress := get("/apis/networking.k8s.io/v1/namespaces/acme/ingresses/tenant")
	if ingress == nil {
		t.Fatal("acme has no ingress")
	}
	spec := ingress["spec"].(map[string]any)
	if rule := spec["rules"].([]any)[0].(map[string]any); rule["host"] != "acme.apps.example.com" ||
		fmt.Sprint(spec["tls"]) != "[map[hosts:[acme.apps.example.com] secretName:tenant-tls]]" {
		t.Fatalf("acme's ingress: %v", spec)
	}
	secret := get("/api/v1/namespaces/acme/secrets/tenant-credentials")
	if secret == nil {
		t.Fatal("acme has no credentials")
	}
	password, err := base64.StdEncoding.DecodeString(secret["data"].(map[string]any)["password"].(string))
	apptest.Must(t, err)
	if len(password) < 32 {
		t.Fatalf("acme's password is %d characters", len(password))
	}

	// The tenant's own deploys run in its namespace with the account the factory made, and no
	// process is given the cluster's token or acme's password, then or when the factory runs again.
	stop = apptest.WatchProcesses(plane.Token, string(password))
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.Admin, uuid.MustParse(tenant), "dev")
	apptest.Must(t, err)
	_, err = s.Pool.Exec(t.Context(), `UPDATE environments SET landing_zone_id = $1 WHERE id = $2`, zone, env.ID)
	apptest.Must(t, err)
	appConfig := apptest.KubeComponent(t, s, s.Admin, nil, "app-config", "  settings:\n    type: kubernetes:core/v1:ConfigMap\n    properties:\n      metadata:\n        name: ${name}\n")
	r = s.Call(t, "POST", "/api/v1/deployments", root, map[string]any{"component_id": appConfig, "environment_id": env.ID,
		"name": "settings", "parameters": map[string]any{"name": "settings"}})
	apptest.WantStatus(t, r, http.StatusAccepted)
	if op := s.WaitOperation(t, root, r.JSON(t)["operation"].(map[string]any)["id"].(string)); op["status"] != "succeeded" {
		t.Fatalf("acme's own deploy: %v", op)
	}
	if get("/api/v1/namespaces/acme/configmaps/settings") == nil {
		t.Fatal("acme's config map is not in its namespace")
	}

	// A mandatory policy of the zone refuses an ingress without TLS after its preview: nothing
	// reaches the cluster.
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/policies", root, map[string]any{
		"name": "ingress-tls", "level": "mandatory", "message": "every Ingress serves TLS",
		"expression": `resource.type != "kubernetes:networking.k8s.io/v1:Ingress" || (has(resource.inputs.spec) && has(resource.inputs.spec.tls) && size(resource.inputs.spec.tls) > 0)`,
	}), http.StatusCreated)
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/policies", root, map[string]any{
		"name": "tenant-hosts", "level": "mandatory", "message": "a tenant's Ingress answers under its namespace's name",
		"expression": `resource.type != "kubernetes:networking.k8s.io/v1:Ingress" || deployment.system || resource.inputs.spec.rules.all(r, r.host.endsWith("." + deployment.namespace + ".apps.example.com"))`,
	}), http.StatusCreated)
	openIngress := apptest.KubeComponent(t, s, s.Admin, nil, "open-ingress", "  web:\n    type: kubernetes:networking.k8s.io/v1:Ingress\n    properties:\n      metadata:\n        name: ${name}\n        annotations:\n          pulumi.com/skipAwait: \"true\"\n      spec:\n        rules:\n          - host: open.apps.example.com\n            http:\n              paths:\n                - path: /\n                  pathType: Prefix\n                  backend:\n                    service:\n                      name: web\n                      port:\n                        number: 80\n")
	r = s.Call(t, "POST", "/api/v1/deployments", root, map[string]any{"component_id": openIngress, "environment_id": env.ID,
		"name": "open", "parameters": map[string]any{"name": "open"}})
	apptest.WantStatus(t, r, http.StatusAccepted)
	op := s.WaitOperation(t, root, r.JSON(t)["operation"].(map[string]any)["id"].(string))
	if op["status"] != "failed" || !strings.Contains(op["error"].(string), "every Ingress serves TLS") || !strings.Contains(op["error"].(string), "ingress-tls") ||
		!strings.Contains(op["error"].(string), "tenant-hosts") {
		t.Fatalf("an ingress without TLS, on another's host, under mandatory policies: %v", op)
	}
	if get("/apis/networking.k8s.io/v1/namespaces/acme/ingresses/open") != nil {
		t.Fatal("the refused ingress reached the cluster")
	}
	// Its namespace stays while deployments live in it.
	r = s.Call(t, "DELETE", "/api/v1/tenants/"+tenant+"/namespaces/"+spaces[0]["id"].(string), root, nil)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantIn(t, r, `"rule":"in_use"`, "acme still has 2 deployments on k8s")
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/environments/"+env.ID.String()+"/decommission", root, nil), http.StatusAccepted)
	if e := s.WaitEnvironment(t, root, env.ID.String()); e["status"] != "decommissioned" {
		t.Fatalf("decommissioning acme's environment: %v", e)
	}

	// Running the factory again changes nothing.
	r = s.Call(t, "POST", "/api/v1/stack-instances/"+inst+"/operations/reconcile", root, map[string]any{})
	apptest.WantStatus(t, r, http.StatusAccepted)
	run := s.WaitRun(t, root, inst, r.JSON(t)["id"].(string))
	if run["status"] != "succeeded" {
		t.Fatalf("running the factory again: %v", run)
	}
	steps := run["steps"].([]any)
	if len(steps) == 0 {
		t.Fatal("running again ran no step")
	}
	for _, st := range steps {
		op := s.Call(t, "GET", "/api/v1/operations/"+st.(map[string]any)["operation_id"].(string), root, nil).JSON(t)
		for kind, n := range op["changes"].(map[string]any) {
			if kind != "same" && n.(float64) > 0 {
				t.Errorf("running again %s %v resources of %s", kind, n, st.(map[string]any)["slot"])
			}
		}
	}

	// A larger tier updates the quota in place.
	r = s.Call(t, "POST", "/api/v1/stack-instances/"+inst+"/operations/change_tier", root, map[string]any{"inputs": map[string]any{"tier": "medium"}})
	apptest.WantStatus(t, r, http.StatusAccepted)
	if run := s.WaitRun(t, root, inst, r.JSON(t)["id"].(string)); run["status"] != "succeeded" {
		t.Fatalf("changing the tier: %v", run)
	}
	hard, after := quotaHard(t, get, "acme")
	if hard["limits.cpu"] != "4" || hard["requests.memory"] != "8Gi" || hard["pods"] != "40" || after != uid {
		t.Fatalf("a medium tier's quota (uid %s, was %s): %v", after, uid, hard)
	}
	if params := s.Call(t, "GET", "/api/v1/stack-instances/"+inst, root, nil).JSON(t)["parameters"].(map[string]any); params["tier"] != "medium" {
		t.Errorf("after changing the tier the instance's parameters are %v", params)
	}

	if seen, looks := stop(); len(seen) > 0 || looks < 10 {
		t.Fatalf("in %d looks while acme's deploys ran, a secret was in %v", looks, seen)
	}

	// Removing the tenant decommissions its namespace first, then removes it on its own.
	r = s.Call(t, "DELETE", "/api/v1/tenants/"+tenant, root, nil)
	apptest.WantStatus(t, r, http.StatusAccepted)
	apptest.WantIn(t, r, "acme on k8s")
	// While it goes it is given no new namespace (unless it is gone already).
	r = s.Call(t, "POST", "/api/v1/tenants/"+tenant+"/namespaces", root, map[string]any{"landing_zone_id": zone, "namespace": "acme-two"})
	if r.Status != http.StatusNotFound {
		apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
		apptest.WantProblem(t, r, "tenant", "state")
	}
	s.WaitInstance(t, root, inst, apptest.Status("destroyed"))
	if ns := get("/api/v1/namespaces/acme"); ns != nil {
		t.Fatalf("namespace acme is still there: %v", ns["status"])
	}
	apptest.WaitFor(t, "acme's removal", func() bool {
		return s.Call(t, "GET", "/api/v1/tenants/"+tenant, root, nil).Status == http.StatusNotFound
	})
	var removed int
	apptest.Must(t, s.Pool.QueryRow(t.Context(), `SELECT count(*) FROM audit_events
		WHERE action = 'tenant.delete' AND target_id = $1 AND diff->>'after' = 'decommissioning acme'`, tenant).Scan(&removed))
	if removed != 1 {
		t.Errorf("%d audit events say acme was removed after its namespace", removed)
	}
	for what, secret := range map[string]string{"the cluster's token": plane.Token, "acme's password": string(password)} {
		if where := s.TablesHolding(t, secret); len(where) > 0 {
			t.Errorf("%s is in the clear in %v", what, where)
		}
		if strings.Contains(s.Logs.String(), secret) {
			t.Errorf("the server's log holds %s", what)
		}
	}
}
