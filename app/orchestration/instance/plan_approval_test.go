package instance_test

import (
	"net/http"
	"strings"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/orchestration/environment"
)

// Before one presses Deploy, the plan says that deploying waits for approval, and for what:
// the strictest of what the policies binding any of its slots ask, asked once for the run.
func TestStackPages_PlanSaysDeployingWaitsForOneApproval(t *testing.T) {
	s := apptest.NewSite(t)
	stackID := apptest.PublishedStack(t, s, "netvm", netAndMachine(t, s))
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	user, admin, root := s.Token(t, s.UserA), s.Token(t, s.AdminA), s.Token(t, s.Admin)
	planOf := func(name string) string {
		r := s.Call(t, "POST", "/api/v1/stack-instances", user, map[string]any{"stack_id": stackID, "environment_id": env.ID,
			"name": name, "parameters": map[string]any{"prefix": name}, "preview_only": true})
		apptest.WantStatus(t, r, http.StatusAccepted)
		r = s.Call(t, "GET", "/stack-instances/"+r.JSON(t)["id"].(string)+"/plan", user, nil)
		apptest.WantStatus(t, r, http.StatusOK)
		return string(r.Body)
	}
	if page := planOf("free"); strings.Contains(page, `data-testid="plan-approval"`) {
		t.Fatalf("a plan no policy binds says it waits for approval:\n%.3000s", page)
	}

	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/approval-policies", admin, map[string]any{"scope": "environment", "scope_id": env.ID,
		"operations": []string{"deploy"}, "approver_role": "user"}), http.StatusCreated)
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/approval-policies", root, map[string]any{"scope": "component",
		"scope_id": apptest.BuiltinIDs(t, s)["simcloud-machine"], "operations": []string{"deploy"}, "approver_role": "tenant_admin",
		"approvals_required": 2}), http.StatusCreated)
	page := planOf("held")
	want := "Deploying waits for one approval of the whole run: 2 approvals from the tenant admin role or higher (other than whoever deploys)."
	if !strings.Contains(page, `data-testid="plan-approval"`) || !strings.Contains(page, want) {
		t.Fatalf("the plan does not say deploying waits for %q:\n%.6000s", want, page)
	}
}
