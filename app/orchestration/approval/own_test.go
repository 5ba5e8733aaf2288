package approval_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"nimbus/app/apptest"
	"nimbus/app/orchestration/environment"
)

func TestApproval_APolicyMayLetALoneAdminApproveTheirOwnDestroy(t *testing.T) {
	g := apptest.NewGated(t, apptest.SiteConfig{Backend: "file"})
	// Two policies bind the destroy: only when both let the requester approve may they.
	strict := g.Policy(t, g.As.Root, map[string]any{"scope": "environment", "scope_id": g.Env, "operations": []string{"destroy"},
		"approver_role": "tenant_admin"})
	g.Policy(t, g.As.Admin, map[string]any{"scope": "environment", "scope_id": g.Env, "operations": []string{"destroy"},
		"approver_role": "tenant_admin", "requester_may_approve": true})
	op, req := g.Destroy(t)
	if req["requester_may_approve"] != false || req["can_decide"] != false {
		t.Fatalf("with one policy asking for four eyes the requester may approve: %v", req)
	}
	g.Decide(t, g.As.Root, req["id"].(string), "reject", "try again with one policy", http.StatusOK)
	g.WaitStatus(t, g.As.Admin, op["id"].(string), "rejected")
	apptest.WantStatus(t, g.Call(t, "DELETE", "/api/v1/approval-policies/"+strict, g.As.Root, nil), http.StatusNoContent)

	op, req = g.Destroy(t)
	if req["requester_may_approve"] != true || req["can_decide"] != true {
		t.Fatalf("the lone admin's own request: %v", req)
	}
	b := apptest.NewBrowser(t, g.URL)
	apptest.WantStatus(t, b.SignIn(t, "admin-a@example.com", "long enough password"), http.StatusSeeOther)
	if page := string(b.Get(t, "/approvals/"+req["id"].(string)).Body); !strings.Contains(page, "the requester too") {
		t.Fatalf("the request's page does not say its requester may approve it:\n%.3000s", page)
	}
	g.Decide(t, g.As.Admin, req["id"].(string), "approve", "", http.StatusOK)
	if got := g.WaitOperation(t, g.As.Admin, op["id"].(string)); got["status"] != "succeeded" {
		t.Fatalf("the destroy its requester approved: %v", got)
	}
	if files := g.CloudFiles(t); len(files) != 0 {
		t.Fatalf("after the approved destroy the cloud holds %v", files)
	}
}

func TestApproval_ASlotsRequestNamesItsStackInstance(t *testing.T) {
	s := apptest.NewSiteWith(t, apptest.SiteConfig{Backend: "file"})
	stackID := apptest.PublishedStack(t, s, "web", apptest.WebStack(t, s, 0))
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	user, admin := s.Token(t, s.UserA), s.Token(t, s.AdminA)
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/approval-policies", admin, map[string]any{"scope": "environment", "scope_id": env.ID,
		"operations": []string{"deploy"}, "approver_role": "tenant_admin"}), http.StatusCreated)
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/stack-instances", user, map[string]any{
		"stack_id": stackID, "environment_id": env.ID, "name": "shop", "parameters": map[string]any{"prefix": "shop", "cores": 2}}), http.StatusAccepted)

	var request map[string]any
	for deadline := time.Now().Add(2 * time.Minute); request == nil; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no slot of the stack instance asked for approval in two minutes")
		}
		for _, r := range s.Call(t, "GET", "/api/v1/approvals?status=pending", admin, nil).JSON(t)["approvals"].([]any) {
			request = r.(map[string]any)
		}
	}
	if request["stack_instance"] != "shop" || request["slot"] == "" {
		t.Fatalf("a slot's request does not name its stack instance: %v", request)
	}
	b := apptest.NewBrowser(t, s.URL)
	apptest.WantStatus(t, b.SignIn(t, "admin-a@example.com", "long enough password"), http.StatusSeeOther)
	page := string(b.Get(t, "/approvals/"+request["id"].(string)).Body)
	if !strings.Contains(page, `data-testid="approval-instance"`) || !strings.Contains(page, ">shop</a>, slot "+request["slot"].(string)) {
		t.Fatalf("the request's page does not name the stack instance:\n%.3000s", page)
	}
}
