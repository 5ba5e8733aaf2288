package instance_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"nimbus/app/apptest"
	"nimbus/app/domain/stack"
	"nimbus/app/orchestration/environment"
)

// netAndMachine is a stack of two layers: a network, and a machine on it.
func netAndMachine(t *testing.T, s *apptest.Site) stack.Definition {
	ids := apptest.BuiltinIDs(t, s)
	return stack.Definition{
		Parameters: json.RawMessage(`{"type":"object","required":["prefix"],"properties":{"prefix":{"type":"string"}}}`),
		Slots: []stack.Slot{
			{Name: "net", Component: uuid.MustParse(ids["simcloud-network"]), Version: 1, Inputs: map[string]stack.Wiring{
				"name": {Kind: stack.Expression, Expr: `params.prefix + "-net"`},
				"cidr": {Kind: stack.Literal, Value: "10.30.0.0/16"},
			}},
			{Name: "vm", Component: uuid.MustParse(ids["simcloud-machine"]), Version: 1, Inputs: map[string]stack.Wiring{
				"name":       {Kind: stack.Expression, Expr: `params.prefix + "-vm"`},
				"network_id": {Kind: stack.Output, Slot: "net", Output: "network_id"},
			}},
		},
		Machine: stack.Machine{States: []stack.State{{Name: "up", Initial: true}}},
	}
}

// slotsOf maps an instance's slots by name.
func slotsOf(inst map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, sl := range inst["slots"].([]any) {
		slot := sl.(map[string]any)
		out[slot["name"].(string)] = slot
	}
	return out
}

func TestStack_PreviewOnlyInstanceIsPendingWithItsFirstLayerPreviewedThenDeploysOrIsDiscarded(t *testing.T) {
	s := apptest.NewSite(t)
	stackID := apptest.PublishedStack(t, s, "netvm", netAndMachine(t, s))
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	user := s.Token(t, s.UserA)
	plan := func(name string) string {
		t.Helper()
		r := s.Call(t, "POST", "/api/v1/stack-instances", user, map[string]any{"stack_id": stackID, "environment_id": env.ID,
			"name": name, "parameters": map[string]any{"prefix": name}, "preview_only": true})
		apptest.WantStatus(t, r, http.StatusAccepted)
		if inst := r.JSON(t); inst["status"] != "pending" {
			t.Fatalf("a preview-only instance is %v", inst["status"])
		}
		return r.JSON(t)["id"].(string)
	}

	r := s.Call(t, "POST", "/api/v1/stack-instances", user, map[string]any{"stack_id": stackID, "environment_id": env.ID,
		"name": "keep", "parameters": map[string]any{"prefix": "keep"}, "preview_only": true, "keep_on_failure": true})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantIn(t, r, `"field":"keep_on_failure"`)

	id := plan("shop")
	slots := slotsOf(s.Call(t, "GET", "/api/v1/stack-instances/"+id, user, nil).JSON(t))
	if slots["vm"]["preview"] != nil || slots["vm"]["deployment_id"] != nil {
		t.Fatalf("the machine reads the network's outputs, yet was previewed: %v", slots["vm"])
	}
	pv, _ := slots["net"]["preview"].(map[string]any)
	if pv == nil {
		t.Fatalf("the network has no preview: %v", slots["net"])
	}
	preview := s.WaitOperation(t, user, pv["operation_id"].(string))
	if preview["status"] != "succeeded" || preview["kind"] != "preview" {
		t.Fatalf("the network's preview: %v", preview)
	}
	planned := false
	for _, res := range preview["resources"].([]any) {
		if m := res.(map[string]any); m["type"] == "simcloud:index:Network" && m["op"] == "create" {
			planned = true
		}
	}
	if !planned {
		t.Fatalf("the network's preview plans no network: %v", preview["resources"])
	}
	inst := s.Call(t, "GET", "/api/v1/stack-instances/"+id, user, nil).JSON(t)
	if inst["status"] != "pending" || slotsOf(inst)["net"]["status"] != "pending" {
		t.Fatalf("after its preview the instance is %v, its network %v", inst["status"], slotsOf(inst)["net"]["status"])
	}
	if files := s.CloudFiles(t); len(files) != 0 {
		t.Fatalf("a plan made things in the cloud: %v", files)
	}
	if runs := s.Call(t, "GET", "/api/v1/stack-instances/"+id+"/runs", user, nil).JSON(t)["runs"].([]any); len(runs) != 0 {
		t.Fatalf("a pending instance has runs: %v", runs)
	}

	// Deploying carries out the network's preview, then deploys the machine on it.
	r = s.Call(t, "POST", "/api/v1/stack-instances/"+id+"/deploy", user, nil)
	apptest.WantStatus(t, r, http.StatusAccepted)
	inst = s.WaitInstance(t, user, id, apptest.Status("active", "failed"))
	if inst["status"] != "active" || inst["state"] != "up" {
		t.Fatalf("the deployed plan: %v", inst)
	}
	ops := s.SlotOperations(t, user, id, "deploy")
	var applies *string
	apptest.Must(t, s.Pool.QueryRow(context.Background(), `SELECT applies::text FROM operations WHERE id = $1`, ops["net"]["id"]).Scan(&applies))
	if applies == nil || *applies != pv["operation_id"] {
		t.Fatalf("the network's deploy applies %v, want its preview %v", applies, pv["operation_id"])
	}
	if got := len(s.CloudFiles(t)); got != 3 {
		t.Fatalf("the cloud holds %d things, want the network, the machine and its disk", got)
	}
	r = s.Call(t, "POST", "/api/v1/stack-instances/"+id+"/deploy", user, nil)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantIn(t, r, "only a pending instance is deployed from its plan")
	r = s.Call(t, "POST", "/api/v1/stack-instances/"+id+"/discard", user, nil)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantIn(t, r, `"field":"instance"`)

	// A plan discarded leaves nothing: its name is free again, no deployment of it lives.
	other := plan("spare")
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/stack-instances/"+other+"/discard", s.Token(t, s.AdminB), nil), http.StatusNotFound)
	r = s.Call(t, "POST", "/api/v1/stack-instances/"+other+"/discard", user, nil)
	apptest.WantStatus(t, r, http.StatusAccepted)
	if inst := s.WaitInstance(t, user, other, apptest.Status("destroyed", "failed")); inst["status"] != "destroyed" {
		t.Fatalf("the discarded plan: %v", inst)
	}
	var live []string
	rows, err := s.Pool.Query(context.Background(), `SELECT name FROM deployed_components WHERE stack_instance_id = $1 AND status <> 'destroyed'`, other)
	apptest.Must(t, err)
	for rows.Next() {
		var name string
		apptest.Must(t, rows.Scan(&name))
		live = append(live, name)
	}
	apptest.Must(t, rows.Err())
	if len(live) != 0 {
		t.Fatalf("deployments of the discarded plan live on: %s", strings.Join(live, ", "))
	}
	if got := len(s.CloudFiles(t)); got != 3 {
		t.Fatalf("discarding a plan changed the cloud: it holds %d things", got)
	}
	plan("spare")
}

func TestStackPages_PlanShowsEachSlotsPreviewAndEditGoesBackWithTheValues(t *testing.T) {
	s := apptest.NewSite(t)
	stackID := apptest.PublishedStack(t, s, "netvm", netAndMachine(t, s))
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	user := s.Token(t, s.UserA)
	wizard := "/stacks/" + stackID.String() + "/deploy"
	form := url.Values{"environment_id": {env.ID.String()}, "name": {"shop"}, "p.prefix": {"shop"}, "action": {"plan"}}

	r := s.Submit(t, wizard, user, form)
	apptest.WantStatus(t, r, http.StatusSeeOther)
	plan := r.Header.Get("Location")
	if !strings.HasSuffix(plan, "/plan") {
		t.Fatalf("the wizard's plan leads to %s", plan)
	}
	page := strings.TrimSuffix(plan, "/plan")
	// The instance's page of a pending instance is its plan.
	if r := s.Call(t, "GET", page, user, nil); !strings.Contains(string(r.Body), `data-testid="plan-view"`) {
		t.Fatalf("a pending instance's page (%d) is not its plan", r.Status)
	}

	// The plan follows the network's preview until it has ended, then shows what it plans.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		r = s.Call(t, "GET", plan, user, nil)
		apptest.WantStatus(t, r, http.StatusOK)
		if strings.Contains(string(r.Body), `data-live="idle"`) {
			break
		}
		apptest.WantIn(t, r, `id="plan-live"`, `data-live="busy"`)
		if time.Now().After(deadline) {
			t.Fatalf("the plan still follows a preview after 3 minutes:\n%.3000s", r.Body)
		}
		time.Sleep(150 * time.Millisecond)
	}
	apptest.WantIn(t, r, `data-testid="slot-preview" data-slot="net" data-status="succeeded"`, "Deploying would create 1 resource.",
		`data-resource="network"`, `data-testid="slot-preview" data-slot="vm" data-status=""`, "Previewed when net has deployed",
		`data-slot="vm" data-input="network_id" data-kind="output"`, `data-testid="deploy"`, `data-testid="discard"`)

	// Edit goes back to the form with the values, and lets the plan go at once: planning again
	// may take the same name.
	r = s.Submit(t, page+"/edit", user, nil)
	apptest.WantStatus(t, r, http.StatusOK)
	apptest.WantIn(t, r, `data-testid="wizard-form"`, `name="name" type="text" value="shop"`, `name="p.prefix"`, `value="shop"`)
	if inst := s.Call(t, "GET", "/api/v1"+page, user, nil).JSON(t); inst["status"] != "destroyed" {
		t.Fatalf("a plan let go by Edit is %v", inst["status"])
	}
	r = s.Submit(t, wizard, user, form)
	apptest.WantStatus(t, r, http.StatusSeeOther)

	// Deploying from the plan goes on to the instance's page; Discard, to the list.
	again := strings.TrimSuffix(r.Header.Get("Location"), "/plan")
	r = s.Submit(t, again+"/deploy", user, nil)
	apptest.WantStatus(t, r, http.StatusSeeOther)
	if got := r.Header.Get("Location"); got != again {
		t.Fatalf("deploying the plan leads to %s", got)
	}
	s.WaitInstance(t, user, strings.TrimPrefix(again, "/stack-instances/"), apptest.Status("active"))
	r = s.Submit(t, again+"/discard", user, nil)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantIn(t, r, "only a pending instance is discarded")
}
