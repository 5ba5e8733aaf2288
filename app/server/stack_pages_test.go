package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"nimbus/app/environment"
	"nimbus/app/stack"
)

// submit posts a page's form as a signed-in client would, without following the redirect.
func (s *site) submit(t *testing.T, path, token string, form url.Values) reply {
	t.Helper()
	req, _ := http.NewRequest("POST", s.url+path, strings.NewReader(form.Encode()))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	must(t, err)
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: data}
}

func wantIn(t testing.TB, r reply, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(string(r.body), p) {
			t.Fatalf("the page (%d) lacks %s:\n%.3000s", r.status, p, r.body)
		}
	}
}

func TestStackPages_WizardRefusesBesideTheFieldsAndOtherTenantsSeeNothing(t *testing.T) {
	s := newSite(t)
	stackID := publishedStack(t, s, "web", webStack(t, s, 0))
	env, err := environment.NewService(s.pool).Create(t.Context(), s.adminA, s.a.ID, "dev")
	must(t, err)
	user, admin, other := s.token(t, s.userA), s.token(t, s.adminA), s.token(t, s.adminB)
	wizard := "/stacks/" + stackID.String() + "/deploy"

	r := s.call(t, "GET", wizard, user, nil)
	wantStatus(t, r, http.StatusOK)
	wantIn(t, r, `name="p.prefix"`, `name="environment_id"`, "Tenant A / dev")

	// A bad name and a parameter missing are refused beside their fields, before the plan.
	form := url.Values{"environment_id": {env.ID.String()}, "name": {"Bad Name!"}, "action": {"plan"}}
	r = s.submit(t, wizard, user, form)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantIn(t, r, `data-field-error="name"`, `data-field-error="parameters.prefix"`)

	form.Set("name", "shop")
	form.Set("p.prefix", "shop")
	r = s.submit(t, wizard, user, form)
	wantStatus(t, r, http.StatusSeeOther)
	plan := r.header.Get("Location")
	page := strings.TrimSuffix(plan, "/plan")
	id := strings.TrimPrefix(page, "/stack-instances/")
	r = s.call(t, "GET", plan, user, nil)
	wantStatus(t, r, http.StatusOK)
	wantIn(t, r, `data-testid="plan-view"`, `id="plan-graph"`, `data-slot="a" data-input="network_id" data-kind="output"`)

	wantStatus(t, s.submit(t, page+"/deploy", user, nil), http.StatusSeeOther)
	s.waitInstance(t, user, id, status("active"))

	// The same name again: refused beside the name. A plan is an instance's page no more.
	r = s.submit(t, wizard, user, form)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantIn(t, r, `data-field-error="name"`, "already has deployments named shop-a")
	r = s.call(t, "GET", plan, user, nil)
	if r.status != http.StatusOK || strings.Contains(string(r.body), `data-testid="plan-view"`) {
		t.Fatalf("the plan of a deployed instance (%d) is not its page: %.2000s", r.status, r.body)
	}
	r = s.submit(t, page+"/edit", user, nil)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantIn(t, r, "only a pending instance is discarded")

	r = s.call(t, "GET", page, user, nil)
	wantStatus(t, r, http.StatusOK)
	wantIn(t, r, `data-status="active"`, `id="slot-graph"`, `id="state-diagram"`, `data-live="idle"`)
	if strings.Contains(string(r.body), `data-testid="destroy-form"`) {
		t.Error("a user who may not destroy the instance is offered the destroy form")
	}

	// The list filters by environment, stack and status, and names a bad filter.
	for query, listed := range map[string]bool{"environment_id=" + env.ID.String(): true, "stack_id=" + stackID.String(): true,
		"status=active": true, "status=failed": false} {
		r := s.call(t, "GET", "/stack-instances?"+query, user, nil)
		wantStatus(t, r, http.StatusOK)
		if got := strings.Contains(string(r.body), `data-instance="shop"`); got != listed {
			t.Errorf("?%s lists shop: %v, want %v", query, got, listed)
		}
	}
	r = s.call(t, "GET", "/api/v1/stack-instances?status=bogus&stack_id=x", user, nil)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantIn(t, r, `"field":"status"`, `"field":"stack_id"`)

	// Another tenant's admin finds neither the instance nor its forms, nor it in the list.
	wantStatus(t, s.call(t, "GET", page, other, nil), http.StatusNotFound)
	wantStatus(t, s.submit(t, page+"/destroy", other, url.Values{"confirm": {"shop"}}), http.StatusNotFound)
	wantStatus(t, s.submit(t, page+"/retry", other, nil), http.StatusNotFound)
	if r := s.call(t, "GET", "/stack-instances", other, nil); strings.Contains(string(r.body), `data-instance="shop"`) {
		t.Fatal("another tenant's list shows the instance")
	}
	// A tenant's own stack is not found by another tenant's wizard.
	var own string
	must(t, s.pool.QueryRow(context.Background(), `INSERT INTO stacks (tenant_id, provider_id, name)
		SELECT $1, id, 'mine' FROM semantic_providers WHERE name = 'simcloud' RETURNING id::text`, s.a.ID).Scan(&own))
	raw, _ := json.Marshal(webStack(t, s, 0))
	_, err = s.pool.Exec(context.Background(), `INSERT INTO stack_versions (stack_id, version, definition, changelog) VALUES ($1, 1, $2, 'first')`, own, raw)
	must(t, err)
	wantStatus(t, s.call(t, "GET", "/stacks/"+own+"/deploy", other, nil), http.StatusNotFound)
	wantStatus(t, s.submit(t, "/stacks/"+own+"/deploy", other, url.Values{"name": {"Bad!"}}), http.StatusNotFound)

	// The destroy form wants the name typed; then it takes the instance down.
	r = s.submit(t, page+"/destroy", admin, url.Values{"confirm": {"shoe"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantIn(t, r, "Type shop, the name of this stack instance, to destroy it (you typed shoe).")
	wantStatus(t, s.submit(t, page+"/destroy", admin, url.Values{"confirm": {"shop"}}), http.StatusSeeOther)
	s.waitInstance(t, user, id, status("destroyed"))
}

func TestStackPages_FailedInstanceSaysWhyAndOffersRetry(t *testing.T) {
	s := newSite(t)
	def := webStack(t, s, 0)
	def.Slots[3].Inputs["fail_on"] = stack.Wiring{Kind: stack.Literal, Value: "create"}
	stackID := publishedStack(t, s, "doomed", def)
	env, err := environment.NewService(s.pool).Create(t.Context(), s.adminA, s.a.ID, "dev")
	must(t, err)
	user := s.token(t, s.userA)
	r := s.call(t, "POST", "/api/v1/stack-instances", user, map[string]any{
		"stack_id": stackID, "environment_id": env.ID, "name": "doomed", "parameters": map[string]any{"prefix": "doomed"}})
	wantStatus(t, r, http.StatusAccepted)
	id := r.json(t)["id"].(string)
	s.waitInstance(t, user, id, func(m map[string]any) bool {
		return m["status"] == "failed" && strings.Contains(m["error"].(string), "What it had made was removed.")
	})

	page := "/stack-instances/" + id
	r = s.call(t, "GET", page, user, nil)
	wantStatus(t, r, http.StatusOK)
	wantIn(t, r, `data-status="failed"`, `data-testid="instance-error"`, "injected failure", `data-testid="retry"`,
		`data-kind="compensate" data-status="succeeded"`, `data-kind="deploy" data-status="failed"`, `href="/operations/`,
		"The state machine starts once every slot is deployed.", `data-live="idle"`)
	if strings.Contains(string(r.body), "data-current") {
		t.Error("a stack never deployed marks a current state")
	}
	r = s.submit(t, page+"/retry", user, nil)
	wantStatus(t, r, http.StatusSeeOther)
	if got := r.header.Get("Location"); got != page {
		t.Fatalf("retry led to %s", got)
	}
	if runs := s.call(t, "GET", "/api/v1/stack-instances/"+id+"/runs", user, nil).json(t)["runs"].([]any); len(runs) != 3 {
		t.Fatalf("after retry the instance has %d runs, want 3", len(runs))
	}
}

func TestStackPages_FireRunAndUpgradeFromTheInstancePage(t *testing.T) {
	s := newSite(t)
	def := webStack(t, s, 0)
	def.Operations = []stack.Operation{{Name: "resize", DisplayName: "Resize the machines", RequiredStates: []string{"active"},
		InputSchema: json.RawMessage(`{"type":"object","required":["cores"],"properties":{"cores":{"type":"integer","minimum":1,"maximum":16}}}`),
		Actions: []stack.Action{{Slot: "a", Do: stack.Update, Inputs: map[string]string{"cores": "inputs.cores"}},
			{Slot: "b", Do: stack.Update, Inputs: map[string]string{"cores": "inputs.cores"}}}}}
	stackID := publishedStack(t, s, "web", def)
	env, err := environment.NewService(s.pool).Create(t.Context(), s.adminA, s.a.ID, "dev")
	must(t, err)
	user, admin := s.token(t, s.userA), s.token(t, s.adminA)
	r := s.call(t, "POST", "/api/v1/stack-instances", user, map[string]any{
		"stack_id": stackID, "environment_id": env.ID, "name": "shop", "parameters": map[string]any{"prefix": "shop"}})
	wantStatus(t, r, http.StatusAccepted)
	id := r.json(t)["id"].(string)
	page := "/stack-instances/" + id
	if inst := s.waitInstance(t, user, id, status("active", "failed")); inst["status"] != "active" {
		t.Fatalf("deploy: %v", inst)
	}
	wantIn(t, s.call(t, "GET", page, user, nil), `data-testid="fire-maintain"`, `data-testid="run-resize"`, `name="resize.p.cores"`)
	if strings.Contains(string(s.call(t, "GET", page, user, nil).body), `id="upgrade"`) {
		t.Fatal("the page offers an upgrade with no newer version published")
	}

	// A trigger moves the state; in maintenance, resize is not offered and is refused in words.
	wantStatus(t, s.submit(t, page+"/transitions", user, url.Values{"trigger": {"maintain"}}), http.StatusSeeOther)
	s.waitInstance(t, user, id, func(m map[string]any) bool { return m["state"] == "maintenance" })
	r = s.submit(t, page+"/operations/resize", user, url.Values{"resize.p.cores": {"4"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantIn(t, r, `data-testid="action-error"`, "active")
	wantStatus(t, s.submit(t, page+"/transitions", user, url.Values{"trigger": {"resume"}}), http.StatusSeeOther)
	s.waitInstance(t, user, id, func(m map[string]any) bool { return m["state"] == "active" })

	// Back in active, resize runs with the form's input.
	r = s.submit(t, page+"/operations/resize", user, url.Values{"resize.p.cores": {"lots"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantIn(t, r, "is not a number")
	wantStatus(t, s.submit(t, page+"/operations/resize", user, url.Values{"resize.p.cores": {"4"}}), http.StatusSeeOther)
	s.waitInstance(t, user, id, func(m map[string]any) bool {
		runs := s.call(t, "GET", "/api/v1/stack-instances/"+id+"/runs", user, nil).json(t)["runs"].([]any)
		newest := runs[0].(map[string]any)
		return newest["kind"] == "day2" && newest["status"] != "queued" && newest["status"] != "running"
	})
	for _, name := range []string{"shop-a", "shop-b"} {
		if got := s.machineCores(t, name); got != 4 {
			t.Fatalf("%s has %v cores after resize to 4", name, got)
		}
	}

	// A newer version is offered with its plan; tenant admins upgrade from the page.
	v2 := webStack(t, s, 0)
	d := v2.Slots[3]
	d.Name, d.DependsOn = "d", []string{"c"}
	d.Inputs = map[string]stack.Wiring{"name": {Kind: stack.Expression, Expr: `params.prefix + "-d"`}}
	v2.Slots = append(v2.Slots, d)
	publishVersion(t, s, stackID, 2, v2)
	wantIn(t, s.call(t, "GET", page, user, nil), `data-slot="d" data-change="added"`, "Tenant admins may upgrade it.")
	wantStatus(t, s.submit(t, page+"/upgrade", admin, url.Values{"version": {"2"}}), http.StatusSeeOther)
	inst := s.waitInstance(t, admin, id, func(m map[string]any) bool { return m["version"] == float64(2) && m["status"] == "active" })
	if len(inst["slots"].([]any)) != 5 {
		t.Fatalf("after the upgrade from the page: %v", inst)
	}
}
