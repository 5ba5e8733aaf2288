package landingzone_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"nimbus/app/apptest"
)

// A landing zone from draft to retired: resolvers configured on the zone, a system service
// deployed when it is published, an environment opened from a template provisioned with its
// two mandatory components and decommissioned, the zone retired, and nothing left behind.
func TestAPI_LandingZoneLifecycle(t *testing.T) {
	s := apptest.NewSite(t)
	ids := apptest.BuiltinIDs(t, s)
	root, admin := s.Token(t, s.Admin), s.Token(t, s.AdminA)

	// Bad input names the field and the rule.
	for _, body := range []map[string]any{{"name": "Bad Name", "provider": "simcloud"}, {"name": "ok", "provider": "nowhere"}} {
		apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/landing-zones", root, body), http.StatusUnprocessableEntity)
	}
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/landing-zones", admin, map[string]any{"name": "mine", "provider": "simcloud"}), http.StatusForbidden)

	r := s.Call(t, "POST", "/api/v1/landing-zones", root, map[string]any{"name": "sim-eu", "provider": "simcloud", "description": "test zone"})
	apptest.WantStatus(t, r, http.StatusCreated)
	zone := r.JSON(t)["id"].(string)

	r = s.Call(t, "POST", "/api/v1/ipam/pools", root, map[string]any{"name": "eu-net", "prefix": "10.60.0.0/24", "landing_zone_id": zone})
	apptest.WantStatus(t, r, http.StatusCreated)
	pool := r.JSON(t)["id"].(string)
	// No subnet size yet: the system network's range cannot be handed out.
	apptest.WantStatus(t, s.Call(t, "PUT", "/api/v1/landing-zones/"+zone+"/resolvers/ipam", root, map[string]any{"pool_id": pool}), http.StatusOK)

	r = s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/system-services", root, map[string]any{
		"component_id": ids["simcloud-network"], "name": "core", "parameters": map[string]any{"name": "core-net"}})
	apptest.WantStatus(t, r, http.StatusCreated)
	core := r.JSON(t)["id"].(string)
	// A system service added by mistake can go again while the zone is a draft.
	r = s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/system-services", root, map[string]any{
		"component_id": ids["simcloud-network"], "name": "spare", "parameters": map[string]any{"name": "spare-net"}})
	apptest.WantStatus(t, r, http.StatusCreated)
	apptest.WantStatus(t, s.Call(t, "DELETE", "/api/v1/landing-zones/"+zone+"/system-services/"+r.JSON(t)["id"].(string), root, nil), http.StatusNoContent)
	// A template may not keep values that are not the component's inputs.
	r = s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/templates", root, map[string]any{"name": "bad",
		"mandatory_components": []map[string]any{{"component_id": ids["simcloud-machine"], "name": "web", "parameters": map[string]any{"gpus": 1}}}})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), "mandatory_components[0].parameters.gpus") {
		t.Fatalf("the refusal does not name the parameter: %s", r.Body)
	}
	r = s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/templates", root, map[string]any{"name": "standard",
		"mandatory_components": []map[string]any{
			{"component_id": ids["simcloud-machine"], "name": "web", "parameters": map[string]any{"cores": 1}},
			{"component_id": ids["simcloud-machine"], "name": "db", "parameters": map[string]any{"cores": 2}},
		}})
	apptest.WantStatus(t, r, http.StatusCreated)
	template := r.JSON(t)["id"].(string)

	// An environment cannot be opened in a draft zone.
	r = s.Call(t, "POST", "/api/v1/environments", admin, map[string]any{"tenant_id": s.A.ID, "name": "early", "template_id": template})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), "draft") {
		t.Fatalf("opening in a draft zone: %s", r.Body)
	}
	// The machines need their names from naming, which the zone does not configure yet.
	r = s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/publish", root, nil)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), "resolvers.naming") || !strings.Contains(string(r.Body), "needs name from naming") {
		t.Fatalf("publishing without naming: %s", r.Body)
	}
	// Nor the system network its range: the refusal says so in the words of the IPAM form.
	apptest.WantProblem(t, r, "resolvers.ipam.subnet_bits", "required")
	if !strings.Contains(string(r.Body), "system service core (simcloud-network) needs a subnet, and its IPAM configuration sets no Subnet prefix length") {
		t.Fatalf("publishing without a subnet size: %s", r.Body)
	}
	apptest.WantStatus(t, s.Call(t, "PUT", "/api/v1/landing-zones/"+zone+"/resolvers/ipam", root, map[string]any{"pool_id": pool, "subnet_bits": 28}), http.StatusOK)
	apptest.WantStatus(t, s.Call(t, "PUT", "/api/v1/landing-zones/"+zone+"/resolvers/naming", root,
		map[string]any{"pattern": "{tenant}-{env}-{seq:02d}", "domain": "eu.example.com"}), http.StatusOK)

	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/publish", root, nil), http.StatusAccepted)
	z := s.WaitZoneServices(t, root, zone)
	services := z["system_services"].([]any)
	if z["status"] != "published" || z["system_status"] != "active" || len(services) != 1 || services[0].(map[string]any)["status"] != "deployed" {
		t.Fatalf("after publishing: %v", z)
	}
	if n := apptest.PoolAllocations(t, s, pool); n != 1 {
		t.Fatalf("the system network holds %d allocations of the zone's pool, want its subnet", n)
	}
	apptest.WantStatus(t, s.Call(t, "DELETE", "/api/v1/landing-zones/"+zone+"/system-services/"+core, root, nil), http.StatusUnprocessableEntity)
	// The system services go with the zone, not on their own.
	r = s.Call(t, "POST", "/api/v1/environments/"+z["system_environment_id"].(string)+"/decommission", root, nil)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), "retire the zone instead") {
		t.Fatalf("decommissioning the system environment: %s", r.Body)
	}

	r = s.Call(t, "POST", "/api/v1/environments", admin, map[string]any{"tenant_id": s.A.ID, "name": "dev", "template_id": template})
	apptest.WantStatus(t, r, http.StatusAccepted)
	env := r.JSON(t)["id"].(string)
	got := s.WaitEnvironment(t, admin, env)
	if got["status"] != "active" || got["landing_zone"] != "sim-eu" || got["template"] != "standard" {
		t.Fatalf("the environment: %v", got)
	}
	// The two deploy at once, so which of them the resolvers serve first is not known: each
	// gets a name and an address of its own.
	var names, addresses string
	apptest.Must(t, s.Pool.QueryRow(context.Background(), `SELECT string_agg(d.parameters->>'name', ' ' ORDER BY d.parameters->>'name'),
		string_agg(d.parameters->>'ip_address', ' ' ORDER BY d.parameters->>'ip_address')
		FROM deployed_components d WHERE d.environment_id = $1 AND d.name IN ('web', 'db')`, env).Scan(&names, &addresses))
	if names != "tenant-a-dev-01 tenant-a-dev-02" || addresses != "10.60.0.16 10.60.0.17" {
		t.Fatalf("the mandatory components got names %s and addresses %s", names, addresses)
	}

	// A withdrawn template opens no more environments; those made from it keep it.
	apptest.WantStatus(t, s.Call(t, "DELETE", "/api/v1/landing-zones/"+zone+"/templates/"+template, root, nil), http.StatusNoContent)
	r = s.Call(t, "POST", "/api/v1/environments", admin, map[string]any{"tenant_id": s.A.ID, "name": "late", "template_id": template})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), "withdrawn") {
		t.Fatalf("opening from a withdrawn template: %s", r.Body)
	}

	// The zone's environments share its pool: none of them gets one overlapping it.
	r = s.Call(t, "POST", "/api/v1/ipam/pools", root, map[string]any{"name": "mine", "prefix": "10.60.0.128/25", "environment_id": env})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), "overlaps pool eu-net") {
		t.Fatalf("an environment's pool inside the zone's: %s", r.Body)
	}

	// Retiring waits for the zone's environments to go.
	r = s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/retire", root, nil)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), "Tenant A/dev") {
		t.Fatalf("retiring with an environment open: %s", r.Body)
	}
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/environments/"+env+"/decommission", s.Token(t, s.UserA), nil), http.StatusForbidden)
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/environments/"+env+"/decommission", admin, nil), http.StatusAccepted)
	if got := s.WaitEnvironment(t, admin, env); got["status"] != "decommissioned" {
		t.Fatalf("after decommissioning: %v", got)
	}
	if n := apptest.PoolAllocations(t, s, pool); n != 1 {
		t.Fatalf("%d allocations left after decommissioning, want only the system network's", n)
	}

	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/retire", root, nil), http.StatusAccepted)
	if z := s.WaitZoneServices(t, root, zone); z["status"] != "retired" || z["system_status"] != "decommissioned" {
		t.Fatalf("after retiring: %v", z)
	}
	if n := apptest.PoolAllocations(t, s, pool); n != 0 {
		t.Fatalf("%d allocations left after retiring", n)
	}
	if files := s.CloudFiles(t); len(files) != 0 {
		t.Fatalf("left in the simulated cloud: %v", files)
	}
	audit := s.Call(t, "GET", "/api/v1/audit-events?action=landing_zone.publish", root, nil)
	if !strings.Contains(string(audit.Body), "sim-eu") {
		t.Fatalf("publishing is not audited: %s", audit.Body)
	}
}

// A mandatory component that fails leaves the environment failed, naming it and what was
// kept; a retry after the cause is gone finishes the provisioning.
func TestAPI_EnvironmentProvisioningFailsThenRetries(t *testing.T) {
	s := apptest.NewSite(t)
	ids := apptest.BuiltinIDs(t, s)
	root, admin := s.Token(t, s.Admin), s.Token(t, s.AdminA)
	zone := s.Call(t, "POST", "/api/v1/landing-zones", root, map[string]any{"name": "sim", "provider": "simcloud"}).JSON(t)["id"].(string)
	r := s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/templates", root, map[string]any{"name": "flaky",
		"mandatory_components": []map[string]any{
			{"component_id": ids["simcloud-machine"], "name": "first", "parameters": map[string]any{"name": "first"}},
			{"component_id": ids["simcloud-machine"], "name": "second", "parameters": map[string]any{"name": "second", "fail_on": "create"}},
		}})
	apptest.WantStatus(t, r, http.StatusCreated)
	template := r.JSON(t)["id"].(string)
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/publish", root, nil), http.StatusAccepted)
	if z := s.WaitZoneServices(t, root, zone); z["system_status"] != "active" {
		t.Fatalf("a zone without system services: %v", z)
	}

	// A tenant denied the machine cannot have an environment that needs one.
	path := "/api/v1/tenants/" + s.A.ID.String() + "/governance/" + ids["simcloud-machine"]
	apptest.WantStatus(t, s.Call(t, "PUT", path, root, map[string]any{"is_allowed": false}), http.StatusOK)
	r = s.Call(t, "POST", "/api/v1/environments", admin, map[string]any{"tenant_id": s.A.ID, "name": "qa", "template_id": template})
	apptest.WantStatus(t, r, http.StatusForbidden)
	if !strings.Contains(string(r.Body), "simcloud-machine") {
		t.Fatalf("the refusal does not name the component: %s", r.Body)
	}
	apptest.WantStatus(t, s.Call(t, "DELETE", path+"?scope=provider", root, nil), http.StatusOK)

	r = s.Call(t, "POST", "/api/v1/environments", admin, map[string]any{"tenant_id": s.A.ID, "name": "qa", "template_id": template})
	apptest.WantStatus(t, r, http.StatusAccepted)
	env := r.JSON(t)["id"].(string)
	got := s.WaitEnvironment(t, admin, env)
	reason, _ := got["status_reason"].(string)
	if got["status"] != "failed" || !strings.Contains(reason, "second (simcloud-machine) did not deploy") || !strings.Contains(reason, "Kept: first") {
		t.Fatalf("after the failure: %v", got)
	}
	// The cause goes: the failing machine is told not to fail, and the provisioning goes on.
	_, err := s.Pool.Exec(context.Background(), `UPDATE deployed_components SET parameters = parameters - 'fail_on' WHERE name = 'second'`)
	apptest.Must(t, err)
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/environments/"+env+"/retry", admin, nil), http.StatusAccepted)
	if got := s.WaitEnvironment(t, admin, env); got["status"] != "active" {
		t.Fatalf("after the retry: %v", got)
	}
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/environments/"+env+"/retry", admin, nil), http.StatusUnprocessableEntity)
}

// A step the rules refuse fails the environment, saying why, instead of being retried until it
// is dropped; decommissioning a failed environment lets go of a component never tried without
// running the engine, and destroys the rest. The components deploy one at a time, so that the
// third is never tried once the second failed.
func TestAPI_RefusedStepFailsTheEnvironmentAndDecommissionCleansUp(t *testing.T) {
	s := apptest.NewSiteWith(t, apptest.SiteConfig{Backend: "file", GraphParallel: 1})
	ids := apptest.BuiltinIDs(t, s)
	root, admin := s.Token(t, s.Admin), s.Token(t, s.AdminA)
	zone := s.Call(t, "POST", "/api/v1/landing-zones", root, map[string]any{"name": "sim", "provider": "simcloud"}).JSON(t)["id"].(string)
	machine := func(name string, params map[string]any) map[string]any {
		params["name"] = name
		return map[string]any{"component_id": ids["simcloud-machine"], "name": name, "parameters": params}
	}
	r := s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/templates", root, map[string]any{"name": "three",
		"mandatory_components": []map[string]any{machine("first", map[string]any{}), machine("second", map[string]any{"fail_on": "create"}),
			machine("third", map[string]any{})}})
	apptest.WantStatus(t, r, http.StatusCreated)
	template := r.JSON(t)["id"].(string)
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/publish", root, nil), http.StatusAccepted)
	s.WaitZoneServices(t, root, zone)

	// The system tenant opens no environments.
	var system string
	apptest.Must(t, s.Pool.QueryRow(context.Background(), `SELECT id::text FROM tenants WHERE system`).Scan(&system))
	r = s.Call(t, "POST", "/api/v1/environments", root, map[string]any{"tenant_id": system, "name": "mine", "template_id": template})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)

	r = s.Call(t, "POST", "/api/v1/environments", admin, map[string]any{"tenant_id": s.A.ID, "name": "qa", "template_id": template})
	apptest.WantStatus(t, r, http.StatusAccepted)
	env := r.JSON(t)["id"].(string)
	if got := s.WaitEnvironment(t, admin, env); got["status"] != "failed" {
		t.Fatalf("the environment: %v", got)
	}
	ids2 := map[string]string{}
	rows, err := s.Pool.Query(context.Background(), `SELECT name, id::text FROM deployed_components WHERE environment_id = $1`, env)
	apptest.Must(t, err)
	for rows.Next() {
		var name, id string
		apptest.Must(t, rows.Scan(&name, &id))
		ids2[name] = id
	}
	rows.Close()
	// Someone destroys what the provisioning kept; the retry cannot deploy it again.
	r = s.Call(t, "POST", "/api/v1/deployments/"+ids2["first"]+"/destroy", admin, nil)
	apptest.WantStatus(t, r, http.StatusAccepted)
	if op := s.WaitOperation(t, admin, r.JSON(t)["id"].(string)); op["status"] != "succeeded" {
		t.Fatalf("destroying first: %v", op)
	}
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/environments/"+env+"/retry", admin, nil), http.StatusAccepted)
	got := s.WaitEnvironment(t, admin, env)
	if reason, _ := got["status_reason"].(string); got["status"] != "failed" || !strings.Contains(reason, "first (simcloud-machine) cannot be deployed") {
		t.Fatalf("after the refused retry: %v", got)
	}

	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/environments/"+env+"/decommission", admin, nil), http.StatusAccepted)
	if got := s.WaitEnvironment(t, admin, env); got["status"] != "decommissioned" {
		t.Fatalf("after decommissioning: %v", got)
	}
	var statuses, thirdOps string
	apptest.Must(t, s.Pool.QueryRow(context.Background(), `SELECT string_agg(name || '=' || status, ' ' ORDER BY name) FROM deployed_components
		WHERE environment_id = $1`, env).Scan(&statuses))
	apptest.Must(t, s.Pool.QueryRow(context.Background(), `SELECT count(*)::text FROM operations WHERE deployment_id = $1`, ids2["third"]).Scan(&thirdOps))
	if statuses != "first=destroyed second=destroyed third=destroyed" || thirdOps != "0" {
		t.Fatalf("after decommissioning: %s, %s operations on third", statuses, thirdOps)
	}
	if files := s.CloudFiles(t); len(files) != 0 {
		t.Fatalf("left in the simulated cloud: %v", files)
	}
}
