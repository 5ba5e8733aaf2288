package server_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/environment"
)

// namespacesOf lists a tenant's namespaces on clusters.
func (s *site) namespacesOf(t testing.TB, token, tenant string) []map[string]any {
	t.Helper()
	r := s.call(t, "GET", "/api/v1/tenants/"+tenant+"/namespaces", token, nil)
	wantStatus(t, r, http.StatusOK)
	var out []map[string]any
	must(t, json.Unmarshal(r.body, &out))
	return out
}

// factoryZone makes a published Kubernetes zone on plane's cluster whose tenant factory is the
// built-in one, and returns the zone's and the factory stack's IDs.
func (s *site) factoryZone(t testing.TB, root string, kubeconfig []byte) (zone, factory string) {
	t.Helper()
	builtinIDs(t, s)
	r := s.call(t, "POST", "/api/v1/landing-zones", root, map[string]any{"name": "k8s", "provider": "kubernetes"})
	wantStatus(t, r, http.StatusCreated)
	zone = r.json(t)["id"].(string)
	wantStatus(t, s.call(t, "PUT", "/api/v1/landing-zones/"+zone+"/cluster", root, map[string]any{"kubeconfig": string(kubeconfig)}), http.StatusOK)
	wantStatus(t, s.call(t, "POST", "/api/v1/landing-zones/"+zone+"/publish", root, nil), http.StatusAccepted)
	if z := s.waitZoneServices(t, root, zone); z["system_status"] != "active" {
		t.Fatalf("after publishing: %v", z)
	}
	r = s.call(t, "POST", "/api/v1/stacks/tenant-factory", root, nil)
	wantStatus(t, r, http.StatusCreated)
	factory = r.json(t)["id"].(string)
	// A draft is no factory yet.
	r = s.call(t, "PUT", "/api/v1/landing-zones/"+zone+"/tenant-factory", root, map[string]any{"stack_id": factory})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantIn(t, r, `"field":"stack_id"`, "publish it first")
	wantStatus(t, s.call(t, "POST", "/api/v1/stacks/"+factory+"/publish", root, map[string]any{"changelog": "The tenant factory."}), http.StatusCreated)
	// Its secret's password comes from the zone's secret provisioner, which the zone must have.
	r = s.call(t, "PUT", "/api/v1/landing-zones/"+zone+"/tenant-factory", root, map[string]any{"stack_id": factory})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantIn(t, r, `"field":"resolvers.secret_provisioner"`, "factory's secret needs password")
	wantStatus(t, s.call(t, "PUT", "/api/v1/landing-zones/"+zone+"/resolvers/secret_provisioner", root, `{"length": 32}`), http.StatusOK)
	r = s.call(t, "PUT", "/api/v1/landing-zones/"+zone+"/tenant-factory", root, map[string]any{"stack_id": factory})
	wantStatus(t, r, http.StatusOK)
	return zone, factory
}

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
	plane := kubePlane(t)
	s := newSite(t)
	root := s.token(t, s.admin)
	zone, _ := s.factoryZone(t, root, plane.Kubeconfig())
	get := func(path string) map[string]any { return kubeGet(t, plane, path) }

	// A namespace of the cluster's own is refused, and no tenant is left behind.
	r := s.call(t, "POST", "/api/v1/tenants", root, map[string]any{"name": "Kube", "provision": map[string]any{
		"landing_zone_id": zone, "namespace": "kube-system"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantIn(t, r, `"field":"provision.namespace"`, "cluster's own")
	r = s.call(t, "POST", "/api/v1/tenants", root, map[string]any{"name": "Kube"})
	wantStatus(t, r, http.StatusCreated)
	// Governance bounds a tenant's tier as it bounds the quota component's, and what the
	// factory works out from the tier too: medium is an allowed tier, but its 40 pods are not.
	kube := r.json(t)["id"].(string)
	wantStatus(t, s.call(t, "PUT", "/api/v1/tenants/"+kube+"/governance/"+builtinIDs(t, s)["k8s-quota"], root, map[string]any{
		"scope": "provider", "is_allowed": true, "parameter_constraints": map[string]any{
			"tier": map[string]any{"allowed": []string{"small", "medium"}}, "pods": map[string]any{"allowed": []string{"20"}}}}), http.StatusOK)
	r = s.call(t, "POST", "/api/v1/tenants/"+kube+"/namespaces", root, map[string]any{"landing_zone_id": zone, "tier": "large"})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantIn(t, r, `"field":"tier"`, `\"large\" is not one of the allowed values`, "for the factory's quota")
	r = s.call(t, "POST", "/api/v1/tenants/"+kube+"/namespaces", root, map[string]any{"landing_zone_id": zone, "tier": "medium"})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantIn(t, r, `"field":"tier"`, `the factory's quota, input pods (from tier \"medium\"): \"40\" is not one of the allowed values (\"20\")`)
	// What comes from another slot is held to the tenant's governance when its slot deploys:
	// the quota's namespace is the namespace slot's output.
	r = s.call(t, "POST", "/api/v1/tenants", root, map[string]any{"name": "Guarded"})
	wantStatus(t, r, http.StatusCreated)
	guarded := r.json(t)["id"].(string)
	wantStatus(t, s.call(t, "PUT", "/api/v1/tenants/"+guarded+"/governance/"+builtinIDs(t, s)["k8s-quota"], root, map[string]any{
		"scope": "provider", "is_allowed": true, "parameter_constraints": map[string]any{"namespace": map[string]any{"pattern": "^team-"}}}), http.StatusOK)
	r = s.call(t, "POST", "/api/v1/tenants/"+guarded+"/namespaces", root, map[string]any{"landing_zone_id": zone})
	wantStatus(t, r, http.StatusAccepted)
	if inst := s.waitInstance(t, root, r.json(t)["stack_instance_id"].(string), func(m map[string]any) bool {
		return m["status"] == "failed" && strings.Contains(m["error"].(string), "removed")
	}); !strings.Contains(inst["error"].(string), `parameters.namespace: "guarded" does not match the pattern ^team-`) ||
		!strings.Contains(inst["error"].(string), "(the tenant of namespace guarded)") {
		t.Fatalf("a namespace guarded's governance refuses its quota: %v", inst)
	}
	if get("/api/v1/namespaces/guarded/resourcequotas/tier") != nil {
		t.Fatal("guarded has a quota its governance refuses")
	}
	// A namespace the cluster has already is not taken over.
	r = s.call(t, "POST", "/api/v1/tenants/"+kube+"/namespaces", root, map[string]any{"landing_zone_id": zone, "namespace": "kube"})
	wantStatus(t, r, http.StatusAccepted)
	kubeInst := r.json(t)["stack_instance_id"].(string)
	s.waitInstance(t, root, kubeInst, status("active"))
	// Nor does a day-2 operation give it a tier its governance refuses: the run stops before the
	// quota is touched, saying why.
	r = s.call(t, "POST", "/api/v1/stack-instances/"+kubeInst+"/operations/change_tier", root, map[string]any{"inputs": map[string]any{"tier": "large"}})
	wantStatus(t, r, http.StatusAccepted)
	if run := s.waitRun(t, root, kubeInst, r.json(t)["id"].(string)); run["status"] != "failed" ||
		!strings.Contains(run["error"].(string), "slot quota: invalid input: ") ||
		!strings.Contains(run["error"].(string), `parameters.tier: "large" is not one of the allowed values`) ||
		!strings.Contains(run["error"].(string), `parameters.pods: "80" is not one of the allowed values`) ||
		!strings.Contains(run["error"].(string), "(the tenant of namespace kube)") {
		t.Fatalf("a tier kube's governance refuses, through change_tier: %v", run)
	}
	if hard, _ := quotaHard(t, get, "kube"); hard["pods"] != "20" {
		t.Fatalf("kube's quota after a refused change_tier: %v", hard)
	}
	s.waitInstance(t, root, kubeInst, status("active"))
	r = s.call(t, "POST", "/api/v1/tenants", root, map[string]any{"name": "Kube!", "provision": map[string]any{"landing_zone_id": zone}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantIn(t, r, `"field":"provision.namespace"`, "has a namespace kube already")
	// The form says so beside the field, and offers the zone.
	r = s.submit(t, "/tenants", root, url.Values{"name": {"Kube2"}, "provision.landing_zone_id": {zone}, "provision.namespace": {"default"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantIn(t, r, `data-field-error="provision.namespace"`, "k8s (tenant-factory)", ">medium<")

	// The zone's policies see a factory's part with what its other parts declare: each namespace
	// it makes comes with a quota, though the quota is the next part's to plan.
	wantStatus(t, s.call(t, "POST", "/api/v1/landing-zones/"+zone+"/policies", root, map[string]any{
		"name": "namespace-quota", "level": "mandatory", "message": "every namespace the factory makes has a quota",
		"expression": `!deployment.system || resource.type != "kubernetes:core/v1:Namespace" || plan.exists(r, r.type == "kubernetes:core/v1:ResourceQuota") ||
			deployment.slot == "namespace" && declared.exists(r, r.type == "kubernetes:core/v1:ResourceQuota" && r.slot == "quota")`,
	}), http.StatusCreated)

	// No engine process is given the cluster's token in its command line or environment.
	stop := watchProcesses(plane.Token)
	r = s.call(t, "POST", "/api/v1/tenants", root, map[string]any{"name": "Acme", "provision": map[string]any{
		"landing_zone_id": zone, "tier": "small"}})
	wantStatus(t, r, http.StatusCreated)
	tenant := r.json(t)["id"].(string)
	spaces := s.namespacesOf(t, root, tenant)
	if len(spaces) != 1 || spaces[0]["namespace"] != "acme" {
		t.Fatalf("acme's namespaces: %v", spaces)
	}
	inst := spaces[0]["stack_instance_id"].(string)
	s.waitInstance(t, root, inst, status("active", "failed"))
	if check, ok := s.slotOperations(t, root, inst, "deploy")["namespace"]["policy"].(map[string]any); !ok ||
		check["resources"] != 2.0 || len(check["violations"].([]any)) != 0 {
		t.Fatalf("the policy check of acme's namespace: %v", check)
	}
	s.waitInstance(t, root, inst, status("active"))
	if seen, looks := stop(); len(seen) > 0 || looks < 10 {
		t.Fatalf("in %d looks while the factory ran, the cluster's token was in %v", looks, seen)
	}
	wantIn(t, s.call(t, "GET", "/tenants/"+tenant, root, nil), `data-testid="namespace-acme"`, `data-status="active"`)
	wantIn(t, s.call(t, "GET", "/landing-zones/"+zone+"/tenant-factory", root, nil), `data-testid="factory-stack"`, "<code>acme</code>")

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
	must(t, err)
	if len(password) < 32 {
		t.Fatalf("acme's password is %d characters", len(password))
	}

	// The tenant's own deploys run in its namespace with the account the factory made, and no
	// process is given the cluster's token or acme's password, then or when the factory runs again.
	stop = watchProcesses(plane.Token, string(password))
	env, err := environment.NewService(s.pool).Create(t.Context(), s.admin, uuid.MustParse(tenant), "dev")
	must(t, err)
	_, err = s.pool.Exec(t.Context(), `UPDATE environments SET landing_zone_id = $1 WHERE id = $2`, zone, env.ID)
	must(t, err)
	appConfig := kubeComponent(t, s, s.admin, nil, "app-config", "  settings:\n    type: kubernetes:core/v1:ConfigMap\n    properties:\n      metadata:\n        name: ${name}\n")
	r = s.call(t, "POST", "/api/v1/deployments", root, map[string]any{"component_id": appConfig, "environment_id": env.ID,
		"name": "settings", "parameters": map[string]any{"name": "settings"}})
	wantStatus(t, r, http.StatusAccepted)
	if op := s.waitOperation(t, root, r.json(t)["operation"].(map[string]any)["id"].(string)); op["status"] != "succeeded" {
		t.Fatalf("acme's own deploy: %v", op)
	}
	if get("/api/v1/namespaces/acme/configmaps/settings") == nil {
		t.Fatal("acme's config map is not in its namespace")
	}

	// A mandatory policy of the zone refuses an ingress without TLS after its preview: nothing
	// reaches the cluster.
	wantStatus(t, s.call(t, "POST", "/api/v1/landing-zones/"+zone+"/policies", root, map[string]any{
		"name": "ingress-tls", "level": "mandatory", "message": "every Ingress serves TLS",
		"expression": `resource.type != "kubernetes:networking.k8s.io/v1:Ingress" || (has(resource.inputs.spec) && has(resource.inputs.spec.tls) && size(resource.inputs.spec.tls) > 0)`,
	}), http.StatusCreated)
	wantStatus(t, s.call(t, "POST", "/api/v1/landing-zones/"+zone+"/policies", root, map[string]any{
		"name": "tenant-hosts", "level": "mandatory", "message": "a tenant's Ingress answers under its namespace's name",
		"expression": `resource.type != "kubernetes:networking.k8s.io/v1:Ingress" || deployment.system || resource.inputs.spec.rules.all(r, r.host.endsWith("." + deployment.namespace + ".apps.example.com"))`,
	}), http.StatusCreated)
	openIngress := kubeComponent(t, s, s.admin, nil, "open-ingress", "  web:\n    type: kubernetes:networking.k8s.io/v1:Ingress\n    properties:\n      metadata:\n        name: ${name}\n        annotations:\n          pulumi.com/skipAwait: \"true\"\n      spec:\n        rules:\n          - host: open.apps.example.com\n            http:\n              paths:\n                - path: /\n                  pathType: Prefix\n                  backend:\n                    service:\n                      name: web\n                      port:\n                        number: 80\n")
	r = s.call(t, "POST", "/api/v1/deployments", root, map[string]any{"component_id": openIngress, "environment_id": env.ID,
		"name": "open", "parameters": map[string]any{"name": "open"}})
	wantStatus(t, r, http.StatusAccepted)
	op := s.waitOperation(t, root, r.json(t)["operation"].(map[string]any)["id"].(string))
	if op["status"] != "failed" || !strings.Contains(op["error"].(string), "every Ingress serves TLS") || !strings.Contains(op["error"].(string), "ingress-tls") ||
		!strings.Contains(op["error"].(string), "tenant-hosts") {
		t.Fatalf("an ingress without TLS, on another's host, under mandatory policies: %v", op)
	}
	if get("/apis/networking.k8s.io/v1/namespaces/acme/ingresses/open") != nil {
		t.Fatal("the refused ingress reached the cluster")
	}
	// Its namespace stays while deployments live in it.
	r = s.call(t, "DELETE", "/api/v1/tenants/"+tenant+"/namespaces/"+spaces[0]["id"].(string), root, nil)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantIn(t, r, `"rule":"in_use"`, "acme still has 2 deployments on k8s")
	wantStatus(t, s.call(t, "POST", "/api/v1/environments/"+env.ID.String()+"/decommission", root, nil), http.StatusAccepted)
	if e := s.waitEnvironment(t, root, env.ID.String()); e["status"] != "decommissioned" {
		t.Fatalf("decommissioning acme's environment: %v", e)
	}

	// Running the factory again changes nothing.
	r = s.call(t, "POST", "/api/v1/stack-instances/"+inst+"/operations/reconcile", root, map[string]any{})
	wantStatus(t, r, http.StatusAccepted)
	run := s.waitRun(t, root, inst, r.json(t)["id"].(string))
	if run["status"] != "succeeded" {
		t.Fatalf("running the factory again: %v", run)
	}
	steps := run["steps"].([]any)
	if len(steps) == 0 {
		t.Fatal("running again ran no step")
	}
	for _, st := range steps {
		op := s.call(t, "GET", "/api/v1/operations/"+st.(map[string]any)["operation_id"].(string), root, nil).json(t)
		for kind, n := range op["changes"].(map[string]any) {
			if kind != "same" && n.(float64) > 0 {
				t.Errorf("running again %s %v resources of %s", kind, n, st.(map[string]any)["slot"])
			}
		}
	}

	// A larger tier updates the quota in place.
	r = s.call(t, "POST", "/api/v1/stack-instances/"+inst+"/operations/change_tier", root, map[string]any{"inputs": map[string]any{"tier": "medium"}})
	wantStatus(t, r, http.StatusAccepted)
	if run := s.waitRun(t, root, inst, r.json(t)["id"].(string)); run["status"] != "succeeded" {
		t.Fatalf("changing the tier: %v", run)
	}
	hard, after := quotaHard(t, get, "acme")
	if hard["limits.cpu"] != "4" || hard["requests.memory"] != "8Gi" || hard["pods"] != "40" || after != uid {
		t.Fatalf("a medium tier's quota (uid %s, was %s): %v", after, uid, hard)
	}
	if params := s.call(t, "GET", "/api/v1/stack-instances/"+inst, root, nil).json(t)["parameters"].(map[string]any); params["tier"] != "medium" {
		t.Errorf("after changing the tier the instance's parameters are %v", params)
	}

	if seen, looks := stop(); len(seen) > 0 || looks < 10 {
		t.Fatalf("in %d looks while acme's deploys ran, a secret was in %v", looks, seen)
	}

	// Removing the tenant decommissions its namespace first, then removes it on its own.
	r = s.call(t, "DELETE", "/api/v1/tenants/"+tenant, root, nil)
	wantStatus(t, r, http.StatusAccepted)
	wantIn(t, r, "acme on k8s")
	// While it goes it is given no new namespace (unless it is gone already).
	r = s.call(t, "POST", "/api/v1/tenants/"+tenant+"/namespaces", root, map[string]any{"landing_zone_id": zone, "namespace": "acme-two"})
	if r.status != http.StatusNotFound {
		wantStatus(t, r, http.StatusUnprocessableEntity)
		wantProblem(t, r, "tenant", "state")
	}
	s.waitInstance(t, root, inst, status("destroyed"))
	if ns := get("/api/v1/namespaces/acme"); ns != nil {
		t.Fatalf("namespace acme is still there: %v", ns["status"])
	}
	waitFor(t, "acme's removal", func() bool {
		return s.call(t, "GET", "/api/v1/tenants/"+tenant, root, nil).status == http.StatusNotFound
	})
	var removed int
	must(t, s.pool.QueryRow(t.Context(), `SELECT count(*) FROM audit_events
		WHERE action = 'tenant.delete' AND target_id = $1 AND diff->>'after' = 'decommissioning acme'`, tenant).Scan(&removed))
	if removed != 1 {
		t.Errorf("%d audit events say acme was removed after its namespace", removed)
	}
	for what, secret := range map[string]string{"the cluster's token": plane.Token, "acme's password": string(password)} {
		if where := s.tablesHolding(t, secret); len(where) > 0 {
			t.Errorf("%s is in the clear in %v", what, where)
		}
		if strings.Contains(s.logs.String(), secret) {
			t.Errorf("the server's log holds %s", what)
		}
	}
}
