package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"nimbus/app/apptest"
	"nimbus/app/domain/component"
	"nimbus/app/kernel/access"
	"nimbus/app/orchestration/environment"
)

// TestBrowser_DestroyWaitsForAnotherAdminsApproval is a destroy under an approval policy as two
// tenant admins live it: the first sets the policy and asks for the destroy, which waits after
// its preview; the second sees it counted in the navigation, reads what will be deleted, and
// approves it with a comment; the destroy then runs to the end.
func TestBrowser_DestroyWaitsForAnotherAdminsApproval(t *testing.T) {
	t.Parallel()
	a := startApp(t)
	ctx := context.Background()
	if _, err := component.EnsureBuiltins(ctx, component.NewService(a.pool, nil, nil)); err != nil {
		t.Fatal(err)
	}
	acme := a.createTenant(t, "acme")
	a.addMember(t, "alice@acme.test", acme.ID, access.TenantAdmin)
	a.addMember(t, "bob@acme.test", acme.ID, access.TenantAdmin)
	env, err := environment.NewService(a.pool).Create(ctx, a.principal(t, adminEmail), acme.ID, "dev")
	if err != nil {
		t.Fatal(err)
	}
	deployment := a.deployMachine(t, "alice@acme.test", env.ID.String())
	browser := newBrowser(t)

	alice := newSession(t, browser, a)
	alice.signIn("alice@acme.test", userPassword)
	alice.open("/approval-policies")
	alice.choose(`#f-scope`, "environment")
	alice.choose(`#f-scope_id`, env.ID.String())
	alice.choose(`#f-approver_role`, "tenant_admin")
	if status := alice.submit(`[data-testid="policy-form"]`); status != 200 {
		t.Fatalf("creating the policy: status %d", status)
	}
	if row := rowWith(alice.rows("policies"), "acme / dev environment"); row == nil || row[1] != "destroy" || row[2] != "1 from Tenant admin" {
		t.Fatalf("the policies list %q", alice.rows("policies"))
	}
	alice.screenshot("approval-policies")

	alice.open("/deployments/" + deployment)
	alice.fill(`[data-testid="destroy-form"] input[name="confirm"]`, "web")
	alice.submitButton(`[data-testid="destroy-form"] button`)
	alice.across(`document.querySelector('[data-testid="operation-live"]')?.dataset.status === 'awaiting_approval'`, 60*time.Second)
	operation := alice.path()
	if got := alice.text(`[data-testid="approval-link"]`); got != "awaiting approval (0 of 1)" {
		t.Fatalf("the operation page says %q", got)
	}
	request := eval[string](alice, `document.querySelector('[data-testid="approval-link"]').getAttribute('href')`)
	if got := eval[string](alice, `document.querySelector('[data-testid="approvals-count"]')?.textContent ?? ''`); got != "" {
		t.Errorf("the requester's navigation counts %q approvals for them", got)
	}
	alice.screenshot("approval-awaiting")

	// The dashboard tells waiting from running.
	alice.open("/")
	if got := alice.text(`[data-testid="dashboard-active"]`); strings.Contains(got, "destroy web") {
		t.Errorf("running now lists the destroy that waits for approval: %q", got)
	}
	if got := alice.text(`[data-testid="dashboard-awaiting"]`); !strings.Contains(got, "destroy web") || !strings.Contains(got, "awaiting approval") {
		t.Errorf("the dashboard's awaiting approval reads %q", got)
	}

	bob := newSession(t, browser, a)
	bob.signIn("bob@acme.test", userPassword)
	if got := bob.text(`[data-testid="approvals-count"]`); got != "1" {
		t.Fatalf("the approver's navigation counts %q", got)
	}
	bob.open("/approvals")
	if rows := bob.rows("approvals-waiting"); len(rows) != 1 || rows[0][0] != "destroy" || rows[0][1] != "web" || rows[0][2] != "acme" ||
		rows[0][3] != "dev" || rows[0][6] != "pending" {
		t.Fatalf("waiting for the approver: %q", rows)
	}
	if got := eval[string](bob, `document.querySelector('[data-testid="approvals-waiting"] tbody td:nth-child(3) a').getAttribute('href')`); got != "/tenants/"+acme.ID.String() {
		t.Errorf("the tenant column links to %q", got)
	}
	bob.screenshot("approvals")
	bob.open(request)
	if got := eval[string](bob, `document.querySelector('[data-testid="breadcrumbs"] a')?.getAttribute('href') ?? ''`); got != "/approvals" {
		t.Errorf("the request's breadcrumbs lead to %q", got)
	}

	// Rejecting asks why, and for a second click, before anything is sent.
	bob.click(`[data-testid="reject"]`)
	bob.waitFor(`document.querySelector('[data-testid="reject-dialog"]').matches(':popover-open')`)
	if got := bob.text(`[data-testid="reject-dialog"] h2`); got != "Reject the destroy of web?" {
		t.Errorf("the rejection asks %q", got)
	}
	bob.click(`[data-testid="reject-form"] [type="submit"]`)
	if !eval[bool](bob, `document.querySelector('#f-reject-comment').validity.valueMissing`) || bob.text(`[data-testid="approval-status"]`) != "pending" {
		t.Fatal("a rejection without a comment was sent")
	}
	// Sent anyway, without the browser's check, it is refused and the request stays.
	bob.eval(`document.querySelector('#f-reject-comment').required = false`)
	if status := bob.submit(`[data-testid="reject-form"]`); status != 200 {
		t.Fatalf("rejecting without a comment: status %d", status)
	}
	if got := bob.text(".flash p"); !strings.Contains(got, "a rejection needs a comment") {
		t.Fatalf("a rejection without a comment says %q", got)
	}
	if got := bob.text(`[data-testid="approval-status"]`); got != "pending" {
		t.Fatalf("after a refused rejection the request is %q", got)
	}
	bob.click(`[data-testid="reject"]`)
	bob.waitFor(`document.querySelector('[data-testid="reject-dialog"]').matches(':popover-open')`)
	bob.click(`[data-testid="reject-dialog"] [popovertargetaction="hide"]`)
	bob.waitFor(`!document.querySelector('[data-testid="reject-dialog"]').matches(':popover-open')`)

	if got := bob.resourceOp("machine"); got != "delete" {
		t.Fatalf("the plan shows %q for the machine, want delete", got)
	}
	if got := bob.text(`[data-testid="approval-parameters"] [data-key="name"]`); got != "web-1" {
		t.Fatalf("the parameters show the name %q", got)
	}
	bob.screenshot("approval-request")
	bob.fill(`#f-comment`, "the web tier moved")
	if status := bob.submit(`[data-testid="decide-form"]`); status != 200 {
		t.Fatalf("approving: status %d", status)
	}
	if got := bob.text(`[data-testid="approval-status"]`); got != "approved" {
		t.Fatalf("after approving the request is %q", got)
	}
	if rows := bob.rows("decisions"); len(rows) != 1 || rows[0][0] != "bob@acme.test" || rows[0][2] != "the web tier moved" {
		t.Fatalf("decisions %q", rows)
	}
	if got := eval[string](bob, `document.querySelector('[data-testid="approvals-count"]')?.textContent ?? ''`); got != "" {
		t.Errorf("after deciding the navigation still counts %q", got)
	}

	bob.open(operation)
	bob.waitOperation("succeeded")
	if files := cloudFiles(t, a); len(files) != 0 {
		t.Fatalf("left in the cloud after the approved destroy: %v", files)
	}
}

// deployMachine deploys the built-in machine named web into the environment through the API as
// the user, waits until it is deployed, and returns the deployment's ID.
func (a *app) deployMachine(t *testing.T, email, environment string) string {
	t.Helper()
	tok := a.token(t, email)
	var machine string
	if err := a.pool.QueryRow(context.Background(), `SELECT id::text FROM components WHERE name = 'simcloud-machine'`).Scan(&machine); err != nil {
		t.Fatal(err)
	}
	var created struct {
		Deployment struct{ ID string }
		Operation  struct{ ID string }
	}
	apiPost(t, a.url+"/api/v1/deployments", tok, map[string]any{"component_id": machine, "environment_id": environment,
		"name": "web", "parameters": map[string]any{"name": "web-1"}}, &created)
	deadline := time.Now().Add(time.Minute)
	for {
		var op struct{ Status, Error string }
		apiGet(t, a.url+"/api/v1/operations/"+created.Operation.ID, tok, &op)
		switch {
		case op.Status == "succeeded":
			return created.Deployment.ID
		case op.Status == "failed" || op.Status == "cancelled" || op.Status == "rejected" || time.Now().After(deadline):
			t.Fatalf("deploying web: %s %s", op.Status, op.Error)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// apiPost calls the JSON API with a bearer token and decodes the accepted answer.
func apiPost(t *testing.T, url, token string, body, into any) {
	t.Helper()
	apiSend(t, http.MethodPost, url, token, body, into)
}

// apiSend sends body as JSON with method and decodes the answer into into; any answer that is
// not a success fails the test.
func apiSend(t *testing.T, method, url, token string, body, into any) {
	t.Helper()
	data, _ := json.Marshal(body)
	req, err := http.NewRequest(method, url, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	r := apptest.Do(t, &http.Client{Timeout: 10 * time.Second}, req)
	if r.Status >= 300 {
		t.Fatalf("%s %s: status %d: %s", method, url, r.Status, r.Body)
	}
	if err := json.Unmarshal(r.Body, into); err != nil {
		t.Fatalf("%s %s: %v in %s", method, url, err, r.Body)
	}
}
