package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"nimbus/app/access"
	"nimbus/app/approval"
	"nimbus/app/environment"
)

// gated is a site with a deployed machine in tenant A's dev environment, and a second tenant
// admin of A to approve what the first asks for.
type gated struct {
	*site
	env, deployment string
	as              tokens
}

// tokens are the API tokens of a user, two tenant admins and a reader of tenant A, the tenant
// admin of B and the provider admin.
type tokens struct {
	user, admin, admin2, reader, other, root string
}

func newGated(t *testing.T, cfg siteConfig) *gated {
	t.Helper()
	s := newSiteWith(t, cfg)
	env, err := environment.NewService(s.pool).Create(t.Context(), s.adminA, s.a.ID, "dev")
	must(t, err)
	g := &gated{site: s, env: env.ID.String(), as: tokens{user: s.token(t, s.userA), admin: s.token(t, s.adminA),
		admin2: s.token(t, s.member(t, "admin2-a@example.com", s.a.ID, access.TenantAdmin)),
		reader: s.token(t, s.readerA), other: s.token(t, s.adminB), root: s.token(t, s.admin)}}
	r := s.call(t, "POST", "/api/v1/deployments", g.as.user, map[string]any{
		"component_id": s.shared.ID, "environment_id": env.ID, "name": "web", "parameters": map[string]any{"name": "web-1"},
	})
	wantStatus(t, r, http.StatusAccepted)
	g.deployment = r.json(t)["deployment"].(map[string]any)["id"].(string)
	if op := s.waitOperation(t, g.as.user, r.json(t)["operation"].(map[string]any)["id"].(string)); op["status"] != "succeeded" {
		t.Fatalf("deploy: %v", op)
	}
	return g
}

// policy makes a policy as the holder of token, which must succeed.
func (g *gated) policy(t *testing.T, token string, body map[string]any) string {
	t.Helper()
	r := g.call(t, "POST", "/api/v1/approval-policies", token, body)
	wantStatus(t, r, http.StatusCreated)
	return r.json(t)["id"].(string)
}

// destroy asks for the deployment's destroy as tenant admin A and waits until it awaits
// approval; it returns the operation and its request.
func (g *gated) destroy(t *testing.T) (op map[string]any, request map[string]any) {
	t.Helper()
	r := g.call(t, "POST", "/api/v1/deployments/"+g.deployment+"/destroy", g.as.admin, nil)
	wantStatus(t, r, http.StatusAccepted)
	op = g.waitStatus(t, g.as.admin, r.json(t)["id"].(string), "awaiting_approval")
	return op, g.requestOf(t, g.as.admin, op["id"].(string), "")
}

// waitStatus polls an operation until it reaches status, and fails when it ends otherwise.
func (g *gated) waitStatus(t *testing.T, token, id, status string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		op := g.call(t, "GET", "/api/v1/operations/"+id, token, nil).json(t)
		switch op["status"] {
		case status:
			return op
		case "succeeded", "failed", "cancelled", "rejected":
			t.Fatalf("operation %s ended %s, want %s: %v", id, op["status"], status, op["error"])
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("operation %s did not reach %s in 3 minutes", id, status)
	return nil
}

// requestOf finds the latest request of an operation in the list of approvals, filtered by
// query.
func (g *gated) requestOf(t *testing.T, token, operation, query string) map[string]any {
	t.Helper()
	var list struct{ Approvals []map[string]any }
	must(t, json.Unmarshal(g.call(t, "GET", "/api/v1/approvals"+query, token, nil).body, &list))
	for _, a := range list.Approvals {
		if a["operation_id"] == operation {
			return a
		}
	}
	return nil
}

func (g *gated) decide(t *testing.T, token, request, decision, comment string, status int) reply {
	t.Helper()
	r := g.call(t, "POST", "/api/v1/approvals/"+request+"/"+decision, token, map[string]any{"comment": comment})
	wantStatus(t, r, status)
	return r
}

func (g *gated) deploymentStatus(t *testing.T) string {
	t.Helper()
	return g.call(t, "GET", "/api/v1/deployments/"+g.deployment, g.as.user, nil).json(t)["status"].(string)
}

func mentions(t *testing.T, r reply, want string) {
	t.Helper()
	if !strings.Contains(string(r.body), want) {
		t.Fatalf("reply %s does not mention %q", r.body, want)
	}
}

func TestApproval_DestroyWaitsForAnotherAdminsApproval(t *testing.T) {
	g := newGated(t, siteConfig{backend: "file"})
	g.policy(t, g.as.admin, map[string]any{"scope": "environment", "scope_id": g.env, "operations": []string{"destroy"},
		"approver_role": "tenant_admin"})

	op, req := g.destroy(t)
	id := req["id"].(string)
	if g.deploymentStatus(t) != "deployed" {
		t.Fatalf("while the destroy waits the deployment is %s, want deployed", g.deploymentStatus(t))
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
	if files := g.cloudFiles(t); len(files) != 2 {
		t.Fatalf("the cloud holds %v while the destroy waits", files)
	}
	if g.requestOf(t, g.as.reader, op["id"].(string), "?status=pending") == nil || g.requestOf(t, g.as.reader, op["id"].(string), "?status=approved") != nil {
		t.Fatal("the waiting request is not listed as pending, and only as pending, to the tenant's reader")
	}
	// The approver sees what will be deleted: the preview of the destroy.
	detail := g.call(t, "GET", "/api/v1/approvals/"+id, g.as.admin2, nil).json(t)
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

	mentions(t, g.decide(t, g.as.admin, id, "approve", "", http.StatusForbidden), "you requested this operation")
	// On the page, the refusal comes back as a message above the request.
	b := newBrowser(t, g.url)
	b.signIn(t, "admin-a@example.com", "long enough password")
	if page := b.get(t, "/approvals/"+id); !strings.Contains(string(page.body), "someone else must approve") || strings.Contains(string(page.body), `data-testid="decide-form"`) {
		t.Fatalf("the requester's page of the request: %.2000s", page.body)
	}
	wantStatus(t, b.post(t, "/approvals/"+id+"/approve", url.Values{"_csrf": {b.csrf}}), http.StatusSeeOther)
	if page := b.get(t, "/approvals/"+id); !strings.Contains(string(page.body), "flash-error") {
		t.Fatalf("no error after approving one's own request: %.2000s", page.body)
	}
	mentions(t, g.decide(t, g.as.user, id, "approve", "", http.StatusForbidden), "Tenant admin")
	g.decide(t, g.as.reader, id, "reject", "", http.StatusForbidden)
	g.decide(t, g.as.other, id, "approve", "", http.StatusNotFound)
	if n := g.call(t, "GET", "/api/v1/approvals", g.as.other, nil).json(t)["approvals"].([]any); len(n) != 0 {
		t.Fatalf("another tenant's admin lists %v", n)
	}

	r := g.decide(t, g.as.admin2, id, "approve", "fine by me", http.StatusOK)
	if got := r.json(t); got["status"] != "approved" || got["approvals"] != 1.0 {
		t.Fatalf("after the approval: %s", r.body)
	}
	op = g.waitOperation(t, g.as.admin, op["id"].(string))
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
	if files := g.cloudFiles(t); len(files) != 0 {
		t.Fatalf("left in the cloud after the approved destroy: %v", files)
	}
	if got := g.deploymentStatus(t); got != "destroyed" {
		t.Fatalf("deployment %s after the approved destroy", got)
	}
	mentions(t, g.decide(t, g.as.admin2, id, "approve", "", http.StatusUnprocessableEntity), "you already approved this")
	mentions(t, g.decide(t, g.as.root, id, "approve", "", http.StatusUnprocessableEntity), "approved already")
	detail = g.call(t, "GET", "/api/v1/approvals/"+id, g.as.reader, nil).json(t)
	decisions := detail["decisions"].([]any)
	if len(decisions) != 1 || decisions[0].(map[string]any)["comment"] != "fine by me" || decisions[0].(map[string]any)["by"] != "admin2-a@example.com" {
		t.Fatalf("decisions %v", decisions)
	}
	audit := g.call(t, "GET", "/api/v1/audit-events?action=approval", g.as.root, nil)
	mentions(t, audit, `"approval.approve"`)
	mentions(t, audit, `"approval_policy.create"`)
}

func TestApproval_RejectEndsTheOperationAndGivesBackItsAddress(t *testing.T) {
	g := newGated(t, siteConfig{backend: "file"})
	m := machine(t, "ip-machine", nil)
	m.Draft.ResolverBindings = json.RawMessage(`{"ip_address": "ipam"}`)
	c, err := g.components.Create(t.Context(), g.world.admin, m)
	must(t, err)
	_, err = g.components.Publish(t.Context(), g.world.admin, c.ID, c.Revision, "first")
	must(t, err)
	r := g.call(t, "POST", "/api/v1/ipam/pools", g.as.root, map[string]any{"name": "net", "prefix": "10.70.0.0/29", "environment_id": g.env})
	wantStatus(t, r, http.StatusCreated)
	pool := r.json(t)["id"].(string)
	wantStatus(t, g.call(t, "PUT", "/api/v1/environments/"+g.env+"/resolvers/ipam", g.as.root, map[string]any{"pool_id": pool}), http.StatusOK)
	// Two policies bind the deploy: together they ask for two approvals from tenant admins.
	g.policy(t, g.as.root, map[string]any{"scope": "component", "scope_id": c.ID, "operations": []string{"deploy", "update"},
		"approvals_required": 2, "approver_role": "user"})
	g.policy(t, g.as.admin, map[string]any{"scope": "environment", "scope_id": g.env, "operations": []string{"deploy"},
		"approvals_required": 1, "approver_role": "tenant_admin"})

	r = g.call(t, "POST", "/api/v1/deployments", g.as.user, map[string]any{
		"component_id": c.ID, "environment_id": g.env, "name": "addressed", "parameters": map[string]any{"name": "addressed"},
	})
	wantStatus(t, r, http.StatusAccepted)
	deployment := r.json(t)["deployment"].(map[string]any)["id"].(string)
	op := g.waitStatus(t, g.as.user, r.json(t)["operation"].(map[string]any)["id"].(string), "awaiting_approval")
	if ip, _ := op["parameters"].(map[string]any)["ip_address"].(string); !strings.HasPrefix(ip, "10.70.0.") {
		t.Fatalf("the waiting deploy's parameters: %v", op["parameters"])
	}
	allocations := func() int {
		held, _ := g.call(t, "GET", "/api/v1/ipam/pools/"+pool, g.as.root, nil).json(t)["allocations"].([]any)
		return len(held)
	}
	if n := allocations(); n != 1 {
		t.Fatalf("the pool holds %d allocations while the deploy waits", n)
	}
	req := g.requestOf(t, g.as.admin2, op["id"].(string), "")
	if req["approvals_required"] != 2.0 || req["approver_role"] != "tenant_admin" || req["can_decide"] != true {
		t.Fatalf("the request: %v", req)
	}
	g.decide(t, g.as.admin, req["id"].(string), "approve", "", http.StatusOK)
	r = g.decide(t, g.as.admin2, req["id"].(string), "reject", "not today", http.StatusOK)
	if r.json(t)["status"] != "rejected" {
		t.Fatalf("after the rejection: %s", r.body)
	}
	op = g.call(t, "GET", "/api/v1/operations/"+op["id"].(string), g.as.user, nil).json(t)
	if op["status"] != "rejected" || op["error"] != "rejected by admin2-a@example.com: not today" || op["finished_at"] == nil {
		t.Fatalf("the rejected deploy: %v", op)
	}
	if n := allocations(); n != 0 {
		t.Fatalf("the pool holds %d allocations after the rejection", n)
	}
	if dep := g.call(t, "GET", "/api/v1/deployments/"+deployment, g.as.user, nil).json(t); dep["status"] != "failed" {
		t.Fatalf("after its first deploy was rejected the deployment is %v", dep["status"])
	}
	if files := g.cloudFiles(t); len(files) != 2 {
		t.Fatalf("the cloud holds %v: the rejected deploy made something, or the first machine went", files)
	}
	mentions(t, g.decide(t, g.as.root, req["id"].(string), "approve", "", http.StatusUnprocessableEntity), "rejected already")
	mentions(t, g.call(t, "GET", "/api/v1/audit-events?action=approval.reject", g.as.root, nil), "not today")
}

func TestApproval_ExpiryAndCancelEndTheWait(t *testing.T) {
	g := newGated(t, siteConfig{backend: "file", approvalTTL: 2 * time.Second})
	g.policy(t, g.as.root, map[string]any{"scope": "environment", "scope_id": g.env, "operations": []string{"destroy"},
		"approver_role": "tenant_admin"})
	expired := func(request string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for g.call(t, "GET", "/api/v1/approvals/"+request, g.as.admin2, nil).json(t)["status"] != "expired" {
			if time.Now().After(deadline) {
				t.Fatal("the request never expired")
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	// Approving after the time is up ends the operation, saying so.
	op, req := g.destroy(t)
	expired(req["id"].(string))
	mentions(t, g.decide(t, g.as.admin2, req["id"].(string), "approve", "", http.StatusUnprocessableEntity), "expired")
	op = g.call(t, "GET", "/api/v1/operations/"+op["id"].(string), g.as.admin, nil).json(t)
	if op["status"] != "rejected" || !strings.Contains(op["error"].(string), "expired") {
		t.Fatalf("the operation whose request expired: %v", op)
	}
	if got := g.deploymentStatus(t); got != "deployed" {
		t.Fatalf("deployment %s after an expired destroy", got)
	}

	// The sweep ends a request nobody looked at.
	op, req = g.destroy(t)
	expired(req["id"].(string))
	_, err := approval.NewService(g.pool, g.jobs).ExpireDue(context.Background())
	must(t, err)
	op = g.call(t, "GET", "/api/v1/operations/"+op["id"].(string), g.as.admin, nil).json(t)
	if op["status"] != "rejected" || !strings.Contains(op["error"].(string), "expired") {
		t.Fatalf("after the sweep: %v", op)
	}
	mentions(t, g.call(t, "GET", "/api/v1/audit-events?action=approval.expire", g.as.root, nil), req["id"].(string))

	// A cancel ends a waiting operation and closes its request.
	op, req = g.destroy(t)
	wantStatus(t, g.call(t, "POST", "/api/v1/operations/"+op["id"].(string)+"/cancel", g.as.admin, nil), http.StatusAccepted)
	op = g.call(t, "GET", "/api/v1/operations/"+op["id"].(string), g.as.admin, nil).json(t)
	if op["status"] != "cancelled" || !strings.Contains(op["error"].(string), "awaited approval") {
		t.Fatalf("the cancelled operation: %v", op)
	}
	if got := g.call(t, "GET", "/api/v1/approvals/"+req["id"].(string), g.as.admin, nil).json(t)["status"]; got != "cancelled" {
		t.Fatalf("the cancelled operation's request is %v", got)
	}
	if got := g.deploymentStatus(t); got != "deployed" || len(g.cloudFiles(t)) != 2 {
		t.Fatalf("deployment %s with %v after the cancel", got, g.cloudFiles(t))
	}
}

func TestApproval_ChangeAfterThePreviewVoidsTheApproval(t *testing.T) {
	g := newGated(t, siteConfig{backend: "file"})
	g.policy(t, g.as.root, map[string]any{"scope": "environment", "scope_id": g.env, "operations": []string{"destroy"},
		"approver_role": "tenant_admin"})
	op, req := g.destroy(t)
	// Nothing else runs on the deployment while its destroy waits, so the change is made by
	// moving the preview before the deploy that succeeded.
	_, err := g.pool.Exec(context.Background(), `UPDATE approval_requests SET previewed_at = previewed_at - interval '1 hour' WHERE id = $1`, req["id"])
	must(t, err)
	mentions(t, g.decide(t, g.as.admin2, req["id"].(string), "approve", "", http.StatusUnprocessableEntity), "void")
	if got := g.call(t, "GET", "/api/v1/approvals/"+req["id"].(string), g.as.admin, nil).json(t)["status"]; got != "void" {
		t.Fatalf("the request is %v, want void", got)
	}
	// The operation previews again and asks anew (the void sent it back to the queue in the
	// same transaction); that approval carries it through.
	g.waitStatus(t, g.as.admin, op["id"].(string), "awaiting_approval")
	again := g.requestOf(t, g.as.admin, op["id"].(string), "?status=pending")
	if again == nil || again["id"] == req["id"] {
		t.Fatalf("after the void request the operation waits on %v", again)
	}
	g.decide(t, g.as.admin2, again["id"].(string), "approve", "", http.StatusOK)
	if op := g.waitOperation(t, g.as.admin, op["id"].(string)); op["status"] != "succeeded" {
		t.Fatalf("the destroy approved after a new preview: %v", op)
	}
	if files := g.cloudFiles(t); len(files) != 0 {
		t.Fatalf("left in the cloud: %v", files)
	}
}

func TestApproval_PolicyRefusalsNameTheFieldAndTheRule(t *testing.T) {
	s := newSite(t)
	env, err := environment.NewService(s.pool).Create(t.Context(), s.adminA, s.a.ID, "dev")
	must(t, err)
	root, admin, adminB := s.token(t, s.admin), s.token(t, s.adminA), s.token(t, s.adminB)
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
		{"a component, by a tenant admin", admin, valid(map[string]any{"scope": "component", "scope_id": s.shared.ID}), 403, "permission"},
		{"unknown field", root, `{"scope": "environment", "approvals": 2}`, 400, "unknown field"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := auditCount(t, s)
			r := s.call(t, "POST", "/api/v1/approval-policies", c.token, c.body)
			wantStatus(t, r, c.status)
			mentions(t, r, c.mention)
			if after := auditCount(t, s); after != before {
				t.Fatalf("a refused policy wrote %d audit events", after-before)
			}
		})
	}

	r := s.call(t, "POST", "/api/v1/approval-policies", root, map[string]any{"scope": "component", "scope_id": s.shared.ID,
		"operations": []string{"upgrade", "upgrade"}, "approver_role": "provider_admin"})
	wantStatus(t, r, http.StatusCreated)
	p := r.json(t)
	if p["approvals_required"] != 1.0 || len(p["operations"].([]any)) != 1 || p["scope_name"] != "shared-machine" {
		t.Fatalf("the policy: %v", p)
	}
	// Tenants see the policies that bind them; only who may make one may delete it.
	if list := s.call(t, "GET", "/api/v1/approval-policies", s.token(t, s.readerA), nil).json(t)["policies"].([]any); len(list) != 1 {
		t.Fatalf("tenant A's reader lists %v", list)
	}
	wantStatus(t, s.call(t, "DELETE", "/api/v1/approval-policies/"+p["id"].(string), admin, nil), http.StatusForbidden)
	wantStatus(t, s.call(t, "DELETE", "/api/v1/approval-policies/"+p["id"].(string), root, nil), http.StatusNoContent)
	wantStatus(t, s.call(t, "DELETE", "/api/v1/approval-policies/"+p["id"].(string), root, nil), http.StatusNotFound)
	mentions(t, s.call(t, "GET", "/api/v1/audit-events?action=approval_policy.delete", root, nil), "shared-machine")
	mentions(t, s.call(t, "GET", "/api/v1/approvals?status=waiting", admin, nil), `"field":"status","rule":"enum"`)
}

func TestPages_ApprovalPolicyForm(t *testing.T) {
	s := newSite(t)
	env, err := environment.NewService(s.pool).Create(t.Context(), s.adminA, s.a.ID, "dev")
	must(t, err)
	b := newBrowser(t, s.url)
	b.signIn(t, "admin-a@example.com", "long enough password")
	page := string(b.get(t, "/approval-policies").body)
	if !strings.Contains(page, `value="`+env.ID.String()+`"`) || strings.Contains(page, `value="landing_zone"`) {
		t.Fatalf("a tenant admin may set policies on their environments only: %.3000s", page)
	}
	form := url.Values{"_csrf": {b.csrf}, "scope": {"environment"}, "scope_id": {env.ID.String()}, "approvals_required": {"many"},
		"approver_role": {"tenant_admin"}}
	r := b.post(t, "/approval-policies", form)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	for _, field := range []string{"operations", "approvals_required"} {
		mentions(t, r, `data-field-error="`+field+`"`)
	}
	form["operations"] = []string{"deploy", "destroy"}
	form.Set("approvals_required", "2")
	wantStatus(t, b.post(t, "/approval-policies", form), http.StatusSeeOther)
	if page := string(b.get(t, "/approval-policies").body); !strings.Contains(page, "deploy, destroy") || !strings.Contains(page, "2 from Tenant admin") {
		t.Fatalf("the new policy is not listed: %.3000s", page)
	}
	wantStatus(t, b.get(t, "/approvals"), http.StatusOK)
}

func TestApproval_ProviderAdminsPolicyStandsAgainstTenantAdmins(t *testing.T) {
	s := newSite(t)
	env, err := environment.NewService(s.pool).Create(t.Context(), s.adminA, s.a.ID, "dev")
	must(t, err)
	root, admin, admin2 := s.token(t, s.admin), s.token(t, s.adminA), s.token(t, s.member(t, "admin2-a@example.com", s.a.ID, access.TenantAdmin))
	user, adminB := s.token(t, s.userA), s.token(t, s.adminB)
	onEnv := map[string]any{"scope": "environment", "scope_id": env.ID, "operations": []string{"destroy"}, "approver_role": "tenant_admin"}
	onComponent := map[string]any{"scope": "component", "scope_id": s.shared.ID, "operations": []string{"deploy"}, "approver_role": "user"}
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
			r := s.call(t, "POST", "/api/v1/approval-policies", c.setBy, c.body)
			wantStatus(t, r, http.StatusCreated)
			p := r.json(t)
			if p["set_by_provider_admin"] != c.setByProvider {
				t.Fatalf("set_by_provider_admin is %v: %s", p["set_by_provider_admin"], r.body)
			}
			id := p["id"].(string)
			r = s.call(t, "DELETE", "/api/v1/approval-policies/"+id, c.deletedBy, nil)
			wantStatus(t, r, c.status)
			mentions(t, r, c.mention)
			listed := strings.Contains(string(s.call(t, "GET", "/api/v1/approval-policies", root, nil).body), id)
			if listed != (c.status != http.StatusNoContent) {
				t.Fatalf("after a DELETE answered %d the policy is listed: %v", c.status, listed)
			}
			if c.status != http.StatusNoContent {
				wantStatus(t, s.call(t, "DELETE", "/api/v1/approval-policies/"+id, root, nil), http.StatusNoContent)
			}
		})
	}
}

func TestPages_ProviderAdminsPolicyCannotBeDeletedByATenantAdmin(t *testing.T) {
	s := newSite(t)
	env, err := environment.NewService(s.pool).Create(t.Context(), s.adminA, s.a.ID, "dev")
	must(t, err)
	r := s.call(t, "POST", "/api/v1/approval-policies", s.token(t, s.admin), map[string]any{"scope": "environment", "scope_id": env.ID,
		"operations": []string{"destroy"}, "approver_role": "provider_admin"})
	wantStatus(t, r, http.StatusCreated)
	id := r.json(t)["id"].(string)
	b := newBrowser(t, s.url)
	b.signIn(t, "admin-a@example.com", "long enough password")
	page := string(b.get(t, "/approval-policies").body)
	if !strings.Contains(page, `data-testid="set-by-provider"`) || strings.Contains(page, "/approval-policies/"+id+"/delete") {
		t.Fatalf("the tenant admin's list shows no mark or offers to delete the provider admin's policy: %.3000s", page)
	}
	// A form posted anyway is refused with the reason above the list, which still holds it.
	wantStatus(t, b.post(t, "/approval-policies/"+id+"/delete", url.Values{"_csrf": {b.csrf}}), http.StatusSeeOther)
	page = string(b.get(t, "/approval-policies").body)
	if !strings.Contains(page, "flash-error") || !strings.Contains(page, "only a provider admin can remove it") || !strings.Contains(page, "root@example.com") {
		t.Fatalf("no refusal naming who set the policy: %.3000s", page)
	}
	if list := s.call(t, "GET", "/api/v1/approval-policies", s.token(t, s.admin), nil).json(t)["policies"].([]any); len(list) != 1 {
		t.Fatalf("policies after the refused delete: %v", list)
	}
}
