package governance_test

import (
	"net/http"
	"strings"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/orchestration/environment"
)

// Governance on the deploy path: a value above the tenant's maximum and a deploy past its
// instance limit are refused naming the rule and who set it; a denied component answers 403
// and leaves the users' catalog.
func TestGovernance_DeploysFollowTheTenantsRules(t *testing.T) {
	s := apptest.NewSite(t)
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	provider, user := s.Token(t, s.Admin), s.Token(t, s.UserA)
	rule := "/api/v1/tenants/" + s.A.ID.String() + "/governance/" + s.Shared.ID.String()
	apptest.WantStatus(t, s.Call(t, "PUT", rule, provider, map[string]any{"is_allowed": true,
		"parameter_constraints": map[string]any{"cores": map[string]any{"maximum": 4}}, "max_instances": 2}), http.StatusOK)

	deploy := func(name string, cores int) apptest.Reply {
		return s.Call(t, "POST", "/api/v1/deployments", user, map[string]any{"component_id": s.Shared.ID, "environment_id": env.ID,
			"name": name, "parameters": map[string]any{"name": name, "cores": cores}})
	}
	r := deploy("big", 8)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if body := string(r.Body); !strings.Contains(body, `"field":"parameters.cores"`) || !strings.Contains(body, "maximum of 4 set by the provider") {
		t.Fatalf("cores above the maximum: %s", body)
	}
	var ops []string
	for _, name := range []string{"one", "two"} {
		r := deploy(name, 4)
		apptest.WantStatus(t, r, http.StatusAccepted)
		ops = append(ops, r.JSON(t)["operation"].(map[string]any)["id"].(string))
	}
	r = deploy("three", 2)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if body := string(r.Body); !strings.Contains(body, `"field":"max_instances"`) || !strings.Contains(body, "at most 2") {
		t.Fatalf("a third deploy: %s", body)
	}
	for _, op := range ops {
		if got := s.WaitOperation(t, user, op); got["status"] != "succeeded" {
			t.Fatalf("deploy: %v", got)
		}
	}
	// An update past the maximum is refused too.
	deps := s.Call(t, "GET", "/api/v1/deployments", user, nil).JSON(t)["deployments"].([]any)
	one := deps[0].(map[string]any)["id"].(string)
	r = s.Call(t, "POST", "/api/v1/deployments/"+one+"/update", user, map[string]any{"parameters": map[string]any{"cores": 6}})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)

	// Denied: 403 for a deploy, gone from a user's catalog, marked in an admin's.
	apptest.WantStatus(t, s.Call(t, "PUT", rule, provider, map[string]any{"is_allowed": false}), http.StatusOK)
	apptest.WantStatus(t, deploy("four", 2), http.StatusForbidden)
	if list := string(s.Call(t, "GET", "/api/v1/components", user, nil).Body); strings.Contains(list, s.Shared.ID.String()) {
		t.Fatalf("a user's catalog lists the denied component: %s", list)
	}
	if list := string(s.Call(t, "GET", "/api/v1/components", s.Token(t, s.AdminA), nil).Body); !strings.Contains(list, `"denied":true`) {
		t.Fatalf("a tenant admin's catalog does not mark the denied component: %s", list)
	}
}
