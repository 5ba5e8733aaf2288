package environment_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"nimbus/app/apptest"
)

// openSlowPair opens an environment from a template of two machines that each take a while to
// make, and returns its ID.
func openSlowPair(t *testing.T, s *apptest.Site) string {
	t.Helper()
	return openPair(t, s, map[string]any{"delay_ms": 2000})
}

// openPair opens an environment from a template of two machines, web and db, with params,
// and returns its ID.
func openPair(t *testing.T, s *apptest.Site, params map[string]any) string {
	t.Helper()
	ids := apptest.BuiltinIDs(t, s)
	root, admin := s.Token(t, s.Admin), s.Token(t, s.AdminA)
	zone := s.Call(t, "POST", "/api/v1/landing-zones", root, map[string]any{"name": "sim", "provider": "simcloud"}).JSON(t)["id"].(string)
	machine := func(name string) map[string]any {
		p := map[string]any{"name": name}
		for k, v := range params {
			p[k] = v
		}
		return map[string]any{"component_id": ids["simcloud-machine"], "name": name, "parameters": p}
	}
	r := s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/templates", root, map[string]any{"name": "pair",
		"mandatory_components": []map[string]any{machine("web"), machine("db")}})
	apptest.WantStatus(t, r, http.StatusCreated)
	template := r.JSON(t)["id"].(string)
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/publish", root, nil), http.StatusAccepted)
	s.WaitZoneServices(t, root, zone)
	r = s.Call(t, "POST", "/api/v1/environments", admin, map[string]any{"tenant_id": s.A.ID, "name": "dev", "template_id": template})
	apptest.WantStatus(t, r, http.StatusAccepted)
	return r.JSON(t)["id"].(string)
}

// deploysRunning counts the environment's deploy operations running now.
func deploysRunning(t *testing.T, s *apptest.Site, env string) int {
	t.Helper()
	var n int
	apptest.Must(t, s.Pool.QueryRow(context.Background(), `SELECT count(*) FROM operations o JOIN deployed_components d ON d.id = o.deployment_id
		WHERE d.environment_id = $1 AND o.kind = 'deploy' AND o.status = 'running'`, env).Scan(&n))
	return n
}

// deploysOverlapping counts the pairs of the environment's deploy operations that ran at once.
func deploysOverlapping(t *testing.T, s *apptest.Site, env string) int {
	t.Helper()
	var n int
	apptest.Must(t, s.Pool.QueryRow(context.Background(), `SELECT count(*) FROM operations a, operations b, deployed_components da, deployed_components db
		WHERE da.id = a.deployment_id AND db.id = b.deployment_id AND da.environment_id = $1 AND db.environment_id = $1
		AND a.kind = 'deploy' AND b.kind = 'deploy' AND a.id < b.id
		AND a.started_at < b.finished_at AND b.started_at < a.finished_at`, env).Scan(&n))
	return n
}

// The mandatory components of one template deploy at once: both operations run together.
func TestAPI_EnvironmentMandatoryComponentsDeployAtOnce(t *testing.T) {
	s := apptest.NewSite(t)
	env := openSlowPair(t, s)
	admin := s.Token(t, s.AdminA)
	together := false
	for deadline := time.Now().Add(4 * time.Minute); !together && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		together = deploysRunning(t, s, env) == 2
		if e := s.Call(t, "GET", "/api/v1/environments/"+env, admin, nil).JSON(t); e["status"] != "provisioning" {
			break
		}
	}
	if !together {
		t.Fatal("the two mandatory components' deploys were never running at once")
	}
	if got := s.WaitEnvironment(t, admin, env); got["status"] != "active" {
		t.Fatalf("the environment: %v", got)
	}
	if n := deploysOverlapping(t, s, env); n != 1 {
		t.Fatalf("%d pairs of deploys ran at once, want the one pair", n)
	}
}

// NIMBUS_GRAPH_PARALLEL bounds them: at 1, the second starts once the first has ended.
func TestAPI_EnvironmentGraphParallelBoundsTheComponents(t *testing.T) {
	s := apptest.NewSiteWith(t, apptest.SiteConfig{Backend: "file", GraphParallel: 1})
	env := openSlowPair(t, s)
	admin := s.Token(t, s.AdminA)
	if got := s.WaitEnvironment(t, admin, env); got["status"] != "active" {
		t.Fatalf("the environment: %v", got)
	}
	var deployed int
	apptest.Must(t, s.Pool.QueryRow(context.Background(), `SELECT count(*) FROM operations o JOIN deployed_components d ON d.id = o.deployment_id
		WHERE d.environment_id = $1 AND o.kind = 'deploy' AND o.status = 'succeeded' AND o.finished_at IS NOT NULL`, env).Scan(&deployed))
	if deployed != 2 {
		t.Fatalf("%d deploys succeeded, want both", deployed)
	}
	if n := deploysOverlapping(t, s, env); n != 0 {
		t.Fatalf("%d pairs of deploys ran at once with a bound of 1", n)
	}
}

// When several mandatory components fail at once, the environment's reason names each.
func TestAPI_EnvironmentNamesEveryComponentThatFailed(t *testing.T) {
	s := apptest.NewSite(t)
	env := openPair(t, s, map[string]any{"fail_on": "create"})
	got := s.WaitEnvironment(t, s.Token(t, s.AdminA), env)
	reason, _ := got["status_reason"].(string)
	for _, want := range []string{"web (simcloud-machine) did not deploy", "db (simcloud-machine) did not deploy", "Nothing was deployed."} {
		if got["status"] != "failed" || !strings.Contains(reason, want) {
			t.Fatalf("the environment %v, want its reason to say %q", got, want)
		}
	}
}

// Decommissioning takes down what the tenant deployed before the template's components: no
// destroy of a mandatory component starts before those of the tenant's deployments ended.
func TestAPI_EnvironmentDecommissionTakesDownTheTemplateLast(t *testing.T) {
	s := apptest.NewSite(t)
	ids := apptest.BuiltinIDs(t, s)
	admin := s.Token(t, s.AdminA)
	env := openPair(t, s, map[string]any{})
	if got := s.WaitEnvironment(t, admin, env); got["status"] != "active" {
		t.Fatalf("the environment: %v", got)
	}
	for _, name := range []string{"app", "cache"} {
		r := s.Call(t, "POST", "/api/v1/deployments", admin, map[string]any{"component_id": ids["simcloud-machine"], "environment_id": env,
			"name": name, "parameters": map[string]any{"name": name, "delay_ms": 1000}})
		apptest.WantStatus(t, r, http.StatusAccepted)
		if op := s.WaitOperation(t, admin, r.JSON(t)["operation"].(map[string]any)["id"].(string)); op["status"] != "succeeded" {
			t.Fatalf("deploying %s: %v", name, op)
		}
	}
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/environments/"+env+"/decommission", admin, nil), http.StatusAccepted)
	if got := s.WaitEnvironment(t, admin, env); got["status"] != "decommissioned" {
		t.Fatalf("after decommissioning: %v", got)
	}
	var destroys, early int
	apptest.Must(t, s.Pool.QueryRow(context.Background(), `SELECT count(*) FROM operations o JOIN deployed_components d ON d.id = o.deployment_id
		WHERE d.environment_id = $1 AND o.kind = 'destroy' AND o.status = 'succeeded'`, env).Scan(&destroys))
	apptest.Must(t, s.Pool.QueryRow(context.Background(), `SELECT count(*) FROM operations m, operations o, deployed_components dm, deployed_components d
		WHERE dm.id = m.deployment_id AND d.id = o.deployment_id AND dm.environment_id = $1 AND d.environment_id = $1
		AND m.kind = 'destroy' AND o.kind = 'destroy' AND dm.template_component_id IS NOT NULL AND d.template_component_id IS NULL
		AND m.started_at < o.finished_at`, env).Scan(&early))
	if destroys != 4 || early != 0 {
		t.Fatalf("%d destroys succeeded, want 4; %d destroys of the template's components started before the tenant's ended", destroys, early)
	}
}
