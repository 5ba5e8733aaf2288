package approval_test

import (
	"net/http"
	"strings"
	"testing"

	"nimbus/app/apptest"
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
