package instance_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/domain/stack"
	"nimbus/app/orchestration/environment"
)

func TestStackPages_WizardRefusesBesideTheFieldsAndOtherTenantsSeeNothing(t *testing.T) {
	s := apptest.NewSite(t)
	stackID := apptest.PublishedStack(t, s, "web", apptest.WebStack(t, s, 0))
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	user, admin, other := s.Token(t, s.UserA), s.Token(t, s.AdminA), s.Token(t, s.AdminB)
	wizard := "/stacks/" + stackID.String() + "/deploy"

	r := s.Call(t, "GET", wizard, user, nil)
	apptest.WantStatus(t, r, http.StatusOK)
	apptest.WantIn(t, r, `name="p.prefix"`, `name="environment_id"`, "Tenant A / dev")

	// A bad name and a parameter missing are refused beside their fields, before the plan.
	form := url.Values{"environment_id": {env.ID.String()}, "name": {"Bad Name!"}, "action": {"plan"}}
	r = s.Submit(t, wizard, user, form)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantIn(t, r, `data-field-error="name"`, `data-field-error="parameters.prefix"`)

	form.Set("name", "shop")
	form.Set("p.prefix", "shop")
	r = s.Submit(t, wizard, user, form)
	apptest.WantStatus(t, r, http.StatusSeeOther)
	plan := r.Header.Get("Location")
	page := strings.TrimSuffix(plan, "/plan")
	id := strings.TrimPrefix(page, "/stack-instances/")
	r = s.Call(t, "GET", plan, user, nil)
	apptest.WantStatus(t, r, http.StatusOK)
	apptest.WantIn(t, r, `data-testid="plan-view"`, `id="plan-graph"`, `data-slot="a" data-input="network_id" data-kind="output"`)

	apptest.WantStatus(t, s.Submit(t, page+"/deploy", user, nil), http.StatusSeeOther)
	s.WaitInstance(t, user, id, apptest.Status("active"))

	// The same name again: refused beside the name. A plan is an instance's page no more.
	r = s.Submit(t, wizard, user, form)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantIn(t, r, `data-field-error="name"`, "already has deployments named shop-a")
	r = s.Call(t, "GET", plan, user, nil)
	if r.Status != http.StatusOK || strings.Contains(string(r.Body), `data-testid="plan-view"`) {
		t.Fatalf("the plan of a deployed instance (%d) is not its page: %.2000s", r.Status, r.Body)
	}
	r = s.Submit(t, page+"/edit", user, nil)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantIn(t, r, "only a pending instance is discarded")

	r = s.Call(t, "GET", page, user, nil)
	apptest.WantStatus(t, r, http.StatusOK)
	apptest.WantIn(t, r, `data-status="active"`, `id="slot-graph"`, `id="state-diagram"`, `data-live="idle"`)
	if strings.Contains(string(r.Body), `data-testid="destroy-form"`) {
		t.Error("a user who may not destroy the instance is offered the destroy form")
	}

	// The list filters by environment, stack and status, and names a bad filter.
	for query, listed := range map[string]bool{"environment_id=" + env.ID.String(): true, "stack_id=" + stackID.String(): true,
		"status=active": true, "status=failed": false} {
		r := s.Call(t, "GET", "/stack-instances?"+query, user, nil)
		apptest.WantStatus(t, r, http.StatusOK)
		if got := strings.Contains(string(r.Body), `data-instance="shop"`); got != listed {
			t.Errorf("?%s lists shop: %v, want %v", query, got, listed)
		}
	}
	r = s.Call(t, "GET", "/api/v1/stack-instances?status=bogus&stack_id=x", user, nil)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantIn(t, r, `"field":"status"`, `"field":"stack_id"`)

	// Another tenant's admin finds neither the instance nor its forms, nor it in the list.
	apptest.WantStatus(t, s.Call(t, "GET", page, other, nil), http.StatusNotFound)
	apptest.WantStatus(t, s.Submit(t, page+"/destroy", other, url.Values{"confirm": {"shop"}}), http.StatusNotFound)
	apptest.WantStatus(t, s.Submit(t, page+"/retry", other, nil), http.StatusNotFound)
	if r := s.Call(t, "GET", "/stack-instances", other, nil); strings.Contains(string(r.Body), `data-instance="shop"`) {
		t.Fatal("another tenant's list shows the instance")
	}
	// A tenant's own stack is not found by another tenant's wizard.
	var own string
	apptest.Must(t, s.Pool.QueryRow(context.Background(), `INSERT INTO stacks (tenant_id, provider_id, name)
		SELECT $1, id, 'mine' FROM semantic_providers WHERE name = 'simcloud' RETURNING id::text`, s.A.ID).Scan(&own))
	raw, _ := json.Marshal(apptest.WebStack(t, s, 0))
	_, err = s.Pool.Exec(context.Background(), `INSERT INTO stack_versions (stack_id, version, definition, changelog) VALUES ($1, 1, $2, 'first')`, own, raw)
	apptest.Must(t, err)
	apptest.WantStatus(t, s.Call(t, "GET", "/stacks/"+own+"/deploy", other, nil), http.StatusNotFound)
	apptest.WantStatus(t, s.Submit(t, "/stacks/"+own+"/deploy", other, url.Values{"name": {"Bad!"}}), http.StatusNotFound)

	// The destroy form wants the name typed; then it takes the instance down.
	r = s.Submit(t, page+"/destroy", admin, url.Values{"confirm": {"shoe"}})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantIn(t, r, "Type shop, the name of this stack instance, to destroy it (you typed shoe).")
	apptest.WantStatus(t, s.Submit(t, page+"/destroy", admin, url.Values{"confirm": {"shop"}}), http.StatusSeeOther)
	s.WaitInstance(t, user, id, apptest.Status("destroyed"))
}

func TestStackPages_FailedInstanceSaysWhyAndOffersRetry(t *testing.T) {
	s := apptest.NewSite(t)
	def := apptest.WebStack(t, s, 0)
	def.Slots[3].Inputs["fail_on"] = stack.Wiring{Kind: stack.Literal, Value: "create"}
	stackID := apptest.PublishedStack(t, s, "doomed", def)
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	user := s.Token(t, s.UserA)
	r := s.Call(t, "POST", "/api/v1/stack-instances", user, map[string]any{
		"stack_id": stackID, "environment_id": env.ID, "name": "doomed", "parameters": map[string]any{"prefix": "doomed"}})
	apptest.WantStatus(t, r, http.StatusAccepted)
	id := r.JSON(t)["id"].(string)
	s.WaitInstance(t, user, id, func(m map[string]any) bool {
		return m["status"] == "failed" && strings.Contains(m["error"].(string), "What it had made was removed.")
	})

	page := "/stack-instances/" + id
	r = s.Call(t, "GET", page, user, nil)
	apptest.WantStatus(t, r, http.StatusOK)
	apptest.WantIn(t, r, `data-status="failed"`, `data-testid="instance-error"`, "injected failure", `data-testid="retry"`,
		`data-kind="compensate" data-status="succeeded"`, `data-kind="deploy" data-status="failed"`, `href="/operations/`,
		"The state machine starts once every slot is deployed.", `data-live="idle"`)
	if strings.Contains(string(r.Body), "data-current") {
		t.Error("a stack never deployed marks a current state")
	}
	r = s.Submit(t, page+"/retry", user, nil)
	apptest.WantStatus(t, r, http.StatusSeeOther)
	if got := r.Header.Get("Location"); got != page {
		t.Fatalf("retry led to %s", got)
	}
	if runs := s.Call(t, "GET", "/api/v1/stack-instances/"+id+"/runs", user, nil).JSON(t)["runs"].([]any); len(runs) != 3 {
		t.Fatalf("after retry the instance has %d runs, want 3", len(runs))
	}
}

func TestStackPages_FireRunAndUpgradeFromTheInstancePage(t *testing.T) {
	s := apptest.NewSite(t)
	def := apptest.WebStack(t, s, 0)
	def.Operations = []stack.Operation{{Name: "resize", DisplayName: "Resize the machines", RequiredStates: []string{"active"},
		InputSchema: json.RawMessage(`{"type":"object","required":["cores"],"properties":{"cores":{"type":"integer","minimum":1,"maximum":16}}}`),
		Actions: []stack.Action{{Slot: "a", Do: stack.Update, Inputs: map[string]string{"cores": "inputs.cores"}},
			{Slot: "b", Do: stack.Update, Inputs: map[string]string{"cores": "inputs.cores"}}}}}
	stackID := apptest.PublishedStack(t, s, "web", def)
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	user, admin := s.Token(t, s.UserA), s.Token(t, s.AdminA)
	r := s.Call(t, "POST", "/api/v1/stack-instances", user, map[string]any{
		"stack_id": stackID, "environment_id": env.ID, "name": "shop", "parameters": map[string]any{"prefix": "shop"}})
	apptest.WantStatus(t, r, http.StatusAccepted)
	id := r.JSON(t)["id"].(string)
	page := "/stack-instances/" + id
	if inst := s.WaitInstance(t, user, id, apptest.Status("active", "failed")); inst["status"] != "active" {
		t.Fatalf("deploy: %v", inst)
	}
	apptest.WantIn(t, s.Call(t, "GET", page, user, nil), `data-testid="fire-maintain"`, `data-testid="run-resize"`, `name="resize.p.cores"`,
		`>Run Resize the machines</button>`)
	if strings.Contains(string(s.Call(t, "GET", page, user, nil).Body), `id="upgrade"`) {
		t.Fatal("the page offers an upgrade with no newer version published")
	}

	// A trigger moves the state; in maintenance, resize is not offered and is refused in words.
	apptest.WantStatus(t, s.Submit(t, page+"/transitions", user, url.Values{"trigger": {"maintain"}}), http.StatusSeeOther)
	s.WaitInstance(t, user, id, func(m map[string]any) bool { return m["state"] == "maintenance" })
	r = s.Submit(t, page+"/operations/resize", user, url.Values{"resize.p.cores": {"4"}})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantIn(t, r, `data-testid="action-error"`, "active")
	apptest.WantStatus(t, s.Submit(t, page+"/transitions", user, url.Values{"trigger": {"resume"}}), http.StatusSeeOther)
	s.WaitInstance(t, user, id, func(m map[string]any) bool { return m["state"] == "active" })

	// Back in active, resize runs with the form's input.
	r = s.Submit(t, page+"/operations/resize", user, url.Values{"resize.p.cores": {"lots"}})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantIn(t, r, "is not a number")
	apptest.WantStatus(t, s.Submit(t, page+"/operations/resize", user, url.Values{"resize.p.cores": {"4"}}), http.StatusSeeOther)
	s.WaitInstance(t, user, id, func(m map[string]any) bool {
		runs := s.Call(t, "GET", "/api/v1/stack-instances/"+id+"/runs", user, nil).JSON(t)["runs"].([]any)
		newest := runs[0].(map[string]any)
		return newest["kind"] == "day2" && newest["status"] != "queued" && newest["status"] != "running"
	})
	for _, name := range []string{"shop-a", "shop-b"} {
		if got := s.MachineCores(t, name); got != 4 {
			t.Fatalf("%s has %v cores after resize to 4", name, got)
		}
	}

	// A newer version is offered with its plan; tenant admins upgrade from the page.
	v2 := apptest.WebStack(t, s, 0)
	d := v2.Slots[3]
	d.Name, d.DependsOn = "d", []string{"c"}
	d.Inputs = map[string]stack.Wiring{"name": {Kind: stack.Expression, Expr: `params.prefix + "-d"`}}
	v2.Slots = append(v2.Slots, d)
	publishVersion(t, s, stackID, 2, v2)
	apptest.WantIn(t, s.Call(t, "GET", page, user, nil), `data-slot="d" data-change="added"`, "Tenant admins may upgrade it.")
	apptest.WantStatus(t, s.Submit(t, page+"/upgrade", admin, url.Values{"version": {"2"}}), http.StatusSeeOther)
	inst := s.WaitInstance(t, admin, id, func(m map[string]any) bool { return m["version"] == float64(2) && m["status"] == "active" })
	if len(inst["slots"].([]any)) != 5 {
		t.Fatalf("after the upgrade from the page: %v", inst)
	}
}
