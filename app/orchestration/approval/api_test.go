package approval_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"nimbus/app/apptest"
	"nimbus/app/kernel/access"
	"nimbus/app/orchestration/approval"
	"nimbus/app/orchestration/environment"
)

func TestApproval_DestroyWaitsForAnotherAdminsApproval(t *testing.T) {
	g := apptest.NewGated(t, apptest.SiteConfig{Backend: "file"})
	g.Policy(t, g.As.Admin, map[string]any{"scope": "environment", "scope_id": g.Env, "operations": []string{"destroy"},
		"approver_role": "tenant_admin"})

	op, req := g.Destroy(t)
	id := req["id"].(string)
	if g.DeploymentStatus(t) != "deployed" {
		t.Fatalf("while the destroy waits the deployment is %s, want deployed", g.DeploymentStatus(t))
	}
	if req["kind"] != "destroy" || req["approvals"] != 0.0 || req["approvals_required"] != 1.0 || req["approver_role"] != "tenant_admin" ||
		req["requested_by"] != "admin-a@example.com" || req["can_decide"] != false {
		t.Fatalf("the request as its requester sees it: %v", req)
	}
	steps := map[string]string{}
	for _, s := range op["steps"].([]any) {
		steps[s.(map[string]any)["name"].(string)] = s.(map[string]any)["status"].(string)
	}
	if steps["preview"] != "done" || steps["approve"] != "pending" || steps["destroy"] != "pending" {
		t.Fatalf("steps while waiting: %v", steps)
	}
	if files := g.CloudFiles(t); len(files) != 2 {
		t.Fatalf("the cloud holds %v while the destroy waits", files)
	}
	if g.RequestOf(t, g.As.Reader, op["id"].(string), "?status=pending") == nil || g.RequestOf(t, g.As.Reader, op["id"].(string), "?status=approved") != nil {
		t.Fatal("the waiting request is not listed as pending, and only as pending, to the tenant's reader")
	}
	// The approver sees what will be deleted: the preview of the destroy.
	detail := g.Call(t, "GET", "/api/v1/approvals/"+id, g.As.Admin2, nil).JSON(t)
	planned := map[string]string{}
	for _, r := range detail["resources"].([]any) {
		res := r.(map[string]any)
		planned[res["name"].(string)] = res["op"].(string) + " " + res["status"].(string)
	}
	if planned["machine"] != "delete planned" || planned["disk"] != "delete planned" || detail["can_decide"] != true {
		t.Fatalf("the second admin sees %v, can decide %v", planned, detail["can_decide"])
	}
	if params := detail["parameters"].(map[string]any); params["name"] != "web-1" {
		t.Fatalf("the request's parameters: %v", params)
	}

	apptest.Mentions(t, g.Decide(t, g.As.Admin, id, "approve", "", http.StatusForbidden), "you requested this operation")
	// On the page, the refusal comes back as a message above the request.
	b := apptest.NewBrowser(t, g.URL)
	b.SignIn(t, "admin-a@example.com", "long enough password")
	if page := b.Get(t, "/approvals/"+id); !strings.Contains(string(page.Body), "someone else must approve") || strings.Contains(string(page.Body), `data-testid="decide-form"`) {
		t.Fatalf("the requester's page of the request: %.2000s", page.Body)
	}
	apptest.WantStatus(t, b.Post(t, "/approvals/"+id+"/approve", url.Values{"_csrf": {b.CSRF}}), http.StatusSeeOther)
	if page := b.Get(t, "/approvals/"+id); !strings.Contains(string(page.Body), "flash-error") {
		t.Fatalf("no error after approving one's own request: %.2000s", page.Body)
	}
	apptest.Mentions(t, g.Decide(t, g.As.User, id, "approve", "", http.StatusForbidden), "Tenant admin")
	g.Decide(t, g.As.Reader, id, "reject", "", http.StatusForbidden)
	g.Decide(t, g.As.Other, id, "approve", "", http.StatusNotFound)
	if n := g.Call(t, "GET", "/api/v1/approvals", g.As.Other, nil).JSON(t)["approvals"].([]any); len(n) != 0 {
		t.Fatalf("another tenant's admin lists %v", n)
	}

	r := g.Decide(t, g.As.Admin2, id, "approve", "fine by me", http.StatusOK)
	if got := r.JSON(t); got["status"] != "approved" || got["approvals"] != 1.0 {
		t.Fatalf("after the approval: %s", r.Body)
	}
	op = g.WaitOperation(t, g.As.Admin, op["id"].(string))
	if op["status"] != "succeeded" {
		t.Fatalf("the approved destroy: %v", op)
	}
	// It went on from where it stopped: the preview ran once, the approve step twice.
	attempts := map[string]float64{}
	for _, s := range op["steps"].([]any) {
		attempts[s.(map[string]any)["name"].(string)] = s.(map[string]any)["attempts"].(float64)
	}
	if attempts["preview"] != 1 || attempts["approve"] != 2 || attempts["destroy"] != 1 {
		t.Fatalf("step attempts %v", attempts)
	}
	if files := g.CloudFiles(t); len(files) != 0 {
		t.Fatalf("left in the cloud after the approved destroy: %v", files)
	}
	if got := g.DeploymentStatus(t); got != "destroyed" {
		t.Fatalf("deployment %s after the approved destroy", got)
	}
	apptest.Mentions(t, g.Decide(t, g.As.Admin2, id, "approve", "", http.StatusUnprocessableEntity), "you already approved this")
	apptest.Mentions(t, g.Decide(t, g.As.Root, id, "approve", "", http.StatusUnprocessableEntity), "approved already")
	detail = g.Call(t, "GET", "/api/v1/approvals/"+id, g.As.Reader, nil).JSON(t)
	decisions := detail["decisions"].([]any)
	if len(decisions) != 1 || decisions[0].(map[string]any)["comment"] != "fine by me" || decisions[0].(map[string]any)["by"] != "admin2-a@example.com" {
		t.Fatalf("decisions %v", decisions)
	}
	audit := g.Call(t, "GET", "/api/v1/audit-events?action=approval", g.As.Root, nil)
	apptest.Mentions(t, audit, `"approval.approve"`)
	apptest.Mentions(t, audit, `"approval_policy.create"`)
}

func TestApproval_RejectEndsTheOperationAndGivesBackItsAddress(t *testing.T) {
	g := apptest.NewGated(t, apptest.SiteConfig{Backend: "file"})
	m := apptest.Machine(t, "ip-machine", nil)
	m.Draft.ResolverBindings = json.RawMessage(`{"ip_address": "ipam"}`)
	c, err := g.Components.Create(t.Context(), g.World.Admin, m)
	apptest.Must(t, err)
	_, err = g.Components.Publish(t.Context(), g.World.Admin, c.ID, c.Revision, "first")
	apptest.Must(t, err)
	r := g.Call(t, "POST", "/api/v1/ipam/pools", g.As.Root, map[string]any{"name": "net", "prefix": "10.70.0.0/29", "environment_id": g.Env})
	apptest.WantStatus(t, r, http.StatusCreated)
	pool := r.JSON(t)["id"].(string)
	apptest.WantStatus(t, g.Call(t, "PUT", "/api/v1/environments/"+g.Env+"/resolvers/ipam", g.As.Root, map[string]any{"pool_id": pool}), http.StatusOK)
	// Two policies bind the deploy: together they ask for two approvals from tenant admins.
	g.Policy(t, g.As.Root, map[string]any{"scope": "component", "scope_id": c.ID, "operations": []string{"deploy", "update"},
		"approvals_required": 2, "approver_role": "user"})
	g.Policy(t, g.As.Admin, map[string]any{"scope": "environment", "scope_id": g.Env, "operations": []string{"deploy"},
		"approvals_required": 1, "approver_role": "tenant_admin"})

	r = g.Call(t, "POST", "/api/v1/deployments", g.As.User, map[string]any{
		"component_id": c.ID, "environment_id": g.Env, "name": "addressed", "parameters": map[string]any{"name": "addressed"},
	})
	apptest.WantStatus(t, r, http.StatusAccepted)
	deployment := r.JSON(t)["deployment"].(map[string]any)["id"].(string)
	op := g.WaitStatus(t, g.As.User, r.JSON(t)["operation"].(map[string]any)["id"].(string), "awaiting_approval")
	if ip, _ := op["parameters"].(map[string]any)["ip_address"].(string); !strings.HasPrefix(ip, "10.70.0.") {
		t.Fatalf("the waiting deploy's parameters: %v", op["parameters"])
	}
	allocations := func() int {
		held, _ := g.Call(t, "GET", "/api/v1/ipam/pools/"+pool, g.As.Root, nil).JSON(t)["allocations"].([]any)
		return len(held)
	}
	if n := allocations(); n != 1 {
		t.Fatalf("the pool holds %d allocations while the deploy waits", n)
	}
	req := g.RequestOf(t, g.As.Admin2, op["id"].(string), "")
	if req["approvals_required"] != 2.0 || req["approver_role"] != "tenant_admin" || req["can_decide"] != true {
		t.Fatalf("the request: %v", req)
	}
	g.Decide(t, g.As.Admin, req["id"].(string), "approve", "", http.StatusOK)
	r = g.Decide(t, g.As.Admin2, req["id"].(string), "reject", "not today", http.StatusOK)
	if r.JSON(t)["status"] != "rejected" {
		t.Fatalf("after the rejection: %s", r.Body)
	}
	op = g.Call(t, "GET", "/api/v1/operations/"+op["id"].(string), g.As.User, nil).JSON(t)
	if op["status"] != "rejected" || op["error"] != "rejected by admin2-a@example.com: not today" || op["finished_at"] == nil {
		t.Fatalf("the rejected deploy: %v", op)
	}
	if n := allocations(); n != 0 {
		t.Fatalf("the pool holds %d allocations after the rejection", n)
	}
	if dep := g.Call(t, "GET", "/api/v1/deployments/"+deployment, g.As.User, nil).JSON(t); dep["status"] != "failed" {
		t.Fatalf("after its first deploy was rejected the deployment is %v", dep["status"])
	}
	if files := g.CloudFiles(t); len(files) != 2 {
		t.Fatalf("the cloud holds %v: the rejected deploy made something, or the first machine went", files)
	}
	apptest.Mentions(t, g.Decide(t, g.As.Root, req["id"].(string), "approve", "", http.StatusUnprocessableEntity), "rejected already")
	apptest.Mentions(t, g.Call(t, "GET", "/api/v1/audit-events?action=approval.reject", g.As.Root, nil), "not today")
}

func TestApproval_ExpiryAndCancelEndTheWait(t *testing.T) {
	g := apptest.NewGated(t, apptest.SiteConfig{Backend: "file", ApprovalTTL: 2 * time.Second})
	g.Policy(t, g.As.Root, map[string]any{"scope": "environment", "scope_id": g.Env, "operations": []string{"destroy"},
		"approver_role": "tenant_admin"})
	expired := func(request string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for g.Call(t, "GET", "/api/v1/approvals/"+request, g.As.Admin2, nil).JSON(t)["status"] != "expired" {
			if time.Now().After(deadline) {
				t.Fatal("the request never expired")
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	// Approving after the time is up ends the operation, saying so.
	op, req := g.Destroy(t)
	expired(req["id"].(string))
	apptest.Mentions(t, g.Decide(t, g.As.Admin2, req["id"].(string), "approve", "", http.StatusUnprocessableEntity), "expired")
	op = g.Call(t, "GET", "/api/v1/operations/"+op["id"].(string), g.As.Admin, nil).JSON(t)
	if op["status"] != "rejected" || !strings.Contains(op["error"].(string), "expired") {
		t.Fatalf("the operation whose request expired: %v", op)
	}
	if got := g.DeploymentStatus(t); got != "deployed" {
		t.Fatalf("deployment %s after an expired destroy", got)
	}

	// The sweep ends a request nobody looked at.
	op, req = g.Destroy(t)
	expired(req["id"].(string))
	_, err := approval.NewService(g.Pool, g.Jobs).ExpireDue(context.Background())
	apptest.Must(t, err)
	op = g.Call(t, "GET", "/api/v1/operations/"+op["id"].(string), g.As.Admin, nil).JSON(t)
	if op["status"] != "rejected" || !strings.Contains(op["error"].(string), "expired") {
		t.Fatalf("after the sweep: %v", op)
	}
	apptest.Mentions(t, g.Call(t, "GET", "/api/v1/audit-events?action=approval.expire", g.As.Root, nil), req["id"].(string))

	// A cancel ends a waiting operation, and its request is withdrawn.
	op, req = g.Destroy(t)
	apptest.WantStatus(t, g.Call(t, "POST", "/api/v1/operations/"+op["id"].(string)+"/cancel", g.As.Admin, nil), http.StatusAccepted)
	op = g.Call(t, "GET", "/api/v1/operations/"+op["id"].(string), g.As.Admin, nil).JSON(t)
	if op["status"] != "cancelled" || !strings.Contains(op["error"].(string), "awaited approval") {
		t.Fatalf("the cancelled operation: %v", op)
	}
	// The request is closed by the approvals' reaction to the cancel, moments later.
	apptest.WaitFor(t, "the cancelled operation's request to close", func() bool {
		return g.Call(t, "GET", "/api/v1/approvals/"+req["id"].(string), g.As.Admin, nil).JSON(t)["status"] == "cancelled"
	})
	if got := g.DeploymentStatus(t); got != "deployed" || len(g.CloudFiles(t)) != 2 {
		t.Fatalf("deployment %s with %v after the cancel", got, g.CloudFiles(t))
	}
}

func TestApproval_ChangeAfterThePreviewVoidsTheApproval(t *testing.T) {
	g := apptest.NewGated(t, apptest.SiteConfig{Backend: "file"})
	g.Policy(t, g.As.Root, map[string]any{"scope": "environment", "scope_id": g.Env, "operations": []string{"destroy"},
		"approver_role": "tenant_admin"})
	op, req := g.Destroy(t)
	// Nothing else runs on the deployment while its destroy waits, so the change is made by
	// moving the preview before the deploy that succeeded.
	_, err := g.Pool.Exec(context.Background(), `UPDATE approval_requests SET previewed_at = previewed_at - interval '1 hour' WHERE id = $1`, req["id"])
	apptest.Must(t, err)
	apptest.Mentions(t, g.Decide(t, g.As.Admin2, req["id"].(string), "approve", "", http.StatusUnprocessableEntity), "void")
	if got := g.Call(t, "GET", "/api/v1/approvals/"+req["id"].(string), g.As.Admin, nil).JSON(t)["status"]; got != "void" {
		t.Fatalf("the request is %v, want void", got)
	}
	// The operation previews again and asks anew (the void sent it back to the queue in the
	// same transaction); that approval carries it through.
	g.WaitStatus(t, g.As.Admin, op["id"].(string), "awaiting_approval")
	again := g.RequestOf(t, g.As.Admin, op["id"].(string), "?status=pending")
	if again == nil || again["id"] == req["id"] {
		t.Fatalf("after the void request the operation waits on %v", again)
	}
	g.Decide(t, g.As.Admin2, again["id"].(string), "approve", "", http.StatusOK)
	if op := g.WaitOperation(t, g.As.Admin, op["id"].(string)); op["status"] != "succeeded" {
		t.Fatalf("the destroy approved after a new preview: %v", op)
	}
	if files := g.CloudFiles(t); len(files) != 0 {
		t.Fatalf("left in the cloud: %v", files)
	}
}

func TestApproval_PolicyRefusalsNameTheFieldAndTheRule(t *testing.T) {
	s := apptest.NewSite(t)
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	root, admin, adminB := s.Token(t, s.Admin), s.Token(t, s.AdminA), s.Token(t, s.AdminB)
	valid := func(change map[string]any) map[string]any {
		body := map[string]any{"scope": "environment", "scope_id": env.ID.String(), "operations": []string{"destroy"},
			"approvals_required": 1, "approver_role": "user"}
		for k, v := range change {
			body[k] = v
		}
		return body
	}
	cases := []struct {
		name, token string
		body        any
		status      int
		mention     string
	}{
		{"unknown scope", root, valid(map[string]any{"scope": "tenant"}), 422, `"field":"scope","rule":"enum"`},
		{"malformed scope id", root, valid(map[string]any{"scope_id": "dev"}), 422, `"field":"scope_id","rule":"uuid"`},
		{"no such environment", root, valid(map[string]any{"scope_id": "00000000-0000-0000-0000-000000000001"}), 422, `"field":"scope_id","rule":"exists"`},
		{"no such landing zone", root, valid(map[string]any{"scope": "landing_zone", "scope_id": "00000000-0000-0000-0000-000000000001"}), 422, `"field":"scope_id","rule":"exists"`},
		{"no operations", root, valid(map[string]any{"operations": []string{}}), 422, `"field":"operations","rule":"required"`},
		{"unknown operation", root, valid(map[string]any{"operations": []string{"destroy", "refresh"}}), 422, `"field":"operations[1]","rule":"enum"`},
		{"no approvals", root, valid(map[string]any{"approvals_required": 0}), 422, `"field":"approvals_required","rule":"range"`},
		{"too many approvals", root, valid(map[string]any{"approvals_required": 11}), 422, `"field":"approvals_required","rule":"range"`},
		{"unknown role", root, valid(map[string]any{"approver_role": "read_only"}), 422, `"field":"approver_role","rule":"enum"`},
		{"another tenant's environment", adminB, valid(nil), 422, `"field":"scope_id","rule":"exists"`},
		{"a component, by a tenant admin", admin, valid(map[string]any{"scope": "component", "scope_id": s.Shared.ID}), 403, "permission"},
		{"unknown field", root, `{"scope": "environment", "approvals": 2}`, 400, "unknown field"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := apptest.AuditCount(t, s)
			r := s.Call(t, "POST", "/api/v1/approval-policies", c.token, c.body)
			apptest.WantStatus(t, r, c.status)
			apptest.Mentions(t, r, c.mention)
			if after := apptest.AuditCount(t, s); after != before {
				t.Fatalf("a refused policy wrote %d audit events", after-before)
			}
		})
	}

	r := s.Call(t, "POST", "/api/v1/approval-policies", root, map[string]any{"scope": "component", "scope_id": s.Shared.ID,
		"operations": []string{"upgrade", "upgrade"}, "approver_role": "provider_admin"})
	apptest.WantStatus(t, r, http.StatusCreated)
	p := r.JSON(t)
	if p["approvals_required"] != 1.0 || len(p["operations"].([]any)) != 1 || p["scope_name"] != "shared-machine" {
		t.Fatalf("the policy: %v", p)
	}
	// Tenants see the policies that bind them; only who may make one may delete it.
	if list := s.Call(t, "GET", "/api/v1/approval-policies", s.Token(t, s.ReaderA), nil).JSON(t)["policies"].([]any); len(list) != 1 {
		t.Fatalf("tenant A's reader lists %v", list)
	}
	apptest.WantStatus(t, s.Call(t, "DELETE", "/api/v1/approval-policies/"+p["id"].(string), admin, nil), http.StatusForbidden)
	apptest.WantStatus(t, s.Call(t, "DELETE", "/api/v1/approval-policies/"+p["id"].(string), root, nil), http.StatusNoContent)
	apptest.WantStatus(t, s.Call(t, "DELETE", "/api/v1/approval-policies/"+p["id"].(string), root, nil), http.StatusNotFound)
	apptest.Mentions(t, s.Call(t, "GET", "/api/v1/audit-events?action=approval_policy.delete", root, nil), "shared-machine")
	apptest.Mentions(t, s.Call(t, "GET", "/api/v1/approvals?status=waiting", admin, nil), `"field":"status","rule":"enum"`)
}

func TestPages_ApprovalPolicyForm(t *testing.T) {
	s := apptest.NewSite(t)
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	b := apptest.NewBrowser(t, s.URL)
	b.SignIn(t, "admin-a@example.com", "long enough password")
	page := string(b.Get(t, "/approval-policies").Body)
	if !strings.Contains(page, `value="`+env.ID.String()+`"`) || strings.Contains(page, `value="landing_zone"`) {
		t.Fatalf("a tenant admin may set policies on their environments only: %.3000s", page)
	}
	form := url.Values{"_csrf": {b.CSRF}, "scope": {"environment"}, "scope_id": {env.ID.String()}, "approvals_required": {"many"},
		"approver_role": {"tenant_admin"}}
	r := b.Post(t, "/approval-policies", form)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	for _, field := range []string{"operations", "approvals_required"} {
		apptest.Mentions(t, r, `data-field-error="`+field+`"`)
	}
	form["operations"] = []string{"deploy", "destroy"}
	form.Set("approvals_required", "2")
	apptest.WantStatus(t, b.Post(t, "/approval-policies", form), http.StatusSeeOther)
	if page := string(b.Get(t, "/approval-policies").Body); !strings.Contains(page, "deploy, destroy") || !strings.Contains(page, "2 from Tenant admin") {
		t.Fatalf("the new policy is not listed: %.3000s", page)
	}
	apptest.WantStatus(t, b.Get(t, "/approvals"), http.StatusOK)
}

func TestApproval_ProviderAdminsPolicyStandsAgainstTenantAdmins(t *testing.T) {
	s := apptest.NewSite(t)
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	root, admin, admin2 := s.Token(t, s.Admin), s.Token(t, s.AdminA), s.Token(t, s.Member(t, "admin2-a@example.com", s.A.ID, access.TenantAdmin))
	user, adminB := s.Token(t, s.UserA), s.Token(t, s.AdminB)
	onEnv := map[string]any{"scope": "environment", "scope_id": env.ID, "operations": []string{"destroy"}, "approver_role": "tenant_admin"}
	onComponent := map[string]any{"scope": "component", "scope_id": s.Shared.ID, "operations": []string{"deploy"}, "approver_role": "user"}
	const stands = "this policy was set by a provider admin (root@example.com); only a provider admin can remove it"
	cases := []struct {
		name             string
		setBy, deletedBy string
		body             map[string]any
		status           int
		mention          string
		setByProvider    bool
	}{
		{"a provider admin's policy on the tenant's environment, by a tenant admin", root, admin, onEnv, http.StatusForbidden, stands, true},
		{"a provider admin's policy on a component the tenant uses, by a tenant admin", root, admin, onComponent, http.StatusForbidden, stands, true},
		{"a provider admin's policy on the tenant's environment, by a user", root, user, onEnv, http.StatusForbidden, stands, true},
		{"a provider admin's policy, by a provider admin", root, root, onEnv, http.StatusNoContent, "", true},
		{"a tenant admin's policy, by another tenant admin", admin, admin2, onEnv, http.StatusNoContent, "", false},
		{"a tenant admin's policy, by a provider admin", admin, root, onEnv, http.StatusNoContent, "", false},
		{"a tenant admin's policy, by a user", admin, user, onEnv, http.StatusForbidden, "permission", false},
		{"a tenant admin's policy, by another tenant's admin", admin, adminB, onEnv, http.StatusNotFound, "not found", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := s.Call(t, "POST", "/api/v1/approval-policies", c.setBy, c.body)
			apptest.WantStatus(t, r, http.StatusCreated)
			p := r.JSON(t)
			if p["set_by_provider_admin"] != c.setByProvider {
				t.Fatalf("set_by_provider_admin is %v: %s", p["set_by_provider_admin"], r.Body)
			}
			id := p["id"].(string)
			r = s.Call(t, "DELETE", "/api/v1/approval-policies/"+id, c.deletedBy, nil)
			apptest.WantStatus(t, r, c.status)
			apptest.Mentions(t, r, c.mention)
			listed := strings.Contains(string(s.Call(t, "GET", "/api/v1/approval-policies", root, nil).Body), id)
			if listed != (c.status != http.StatusNoContent) {
				t.Fatalf("after a DELETE answered %d the policy is listed: %v", c.status, listed)
			}
			if c.status != http.StatusNoContent {
				apptest.WantStatus(t, s.Call(t, "DELETE", "/api/v1/approval-policies/"+id, root, nil), http.StatusNoContent)
			}
		})
	}
}

func TestPages_ProviderAdminsPolicyCannotBeDeletedByATenantAdmin(t *testing.T) {
	s := apptest.NewSite(t)
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	r := s.Call(t, "POST", "/api/v1/approval-policies", s.Token(t, s.Admin), map[string]any{"scope": "environment", "scope_id": env.ID,
		"operations": []string{"destroy"}, "approver_role": "provider_admin"})
	apptest.WantStatus(t, r, http.StatusCreated)
	id := r.JSON(t)["id"].(string)
	b := apptest.NewBrowser(t, s.URL)
	b.SignIn(t, "admin-a@example.com", "long enough password")
	page := string(b.Get(t, "/approval-policies").Body)
	if !strings.Contains(page, `data-testid="set-by-provider"`) || strings.Contains(page, "/approval-policies/"+id+"/delete") {
		t.Fatalf("the tenant admin's list shows no mark or offers to delete the provider admin's policy: %.3000s", page)
	}
	// A form posted anyway is refused with the reason above the list, which still holds it.
	apptest.WantStatus(t, b.Post(t, "/approval-policies/"+id+"/delete", url.Values{"_csrf": {b.CSRF}}), http.StatusSeeOther)
	page = string(b.Get(t, "/approval-policies").Body)
	if !strings.Contains(page, "flash-error") || !strings.Contains(page, "only a provider admin can remove it") || !strings.Contains(page, "root@example.com") {
		t.Fatalf("no refusal naming who set the policy: %.3000s", page)
	}
	if list := s.Call(t, "GET", "/api/v1/approval-policies", s.Token(t, s.Admin), nil).JSON(t)["policies"].([]any); len(list) != 1 {
		t.Fatalf("policies after the refused delete: %v", list)
	}
}
