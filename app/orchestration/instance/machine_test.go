package instance_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"nimbus/app/apptest"
	"nimbus/app/domain/stack"
	"nimbus/app/orchestration/environment"
)

// machineStack is webStack with actions on its transitions, a state left by itself after a
// second, and day-2 operations: resize (a and b's cores), service (refresh c, then maintain)
// and break (an update of c that fails).
func machineStack(t *testing.T, s *apptest.Site) stack.Definition {
	def := apptest.WebStack(t, s, 0)
	m := &def.Machine
	m.States = append(m.States, stack.State{Name: "draining"})
	m.Transitions[0].Action = []stack.Action{{Slot: "a", Do: stack.Refresh}}
	m.Transitions[1].Action = []stack.Action{{Slot: "b", Do: stack.Refresh}}
	m.Transitions = append(m.Transitions,
		stack.Transition{From: "active", To: "draining", Trigger: "drain", Timeout: "1s", OnTimeout: "drained"},
		stack.Transition{From: "draining", To: "active", Trigger: "drained"})
	def.Operations = []stack.Operation{
		{Name: "resize", InputSchema: json.RawMessage(`{"type":"object","required":["cores"],"properties":{"cores":{"type":"integer"}}}`),
			RequiredStates: []string{"active"}, Actions: []stack.Action{
				{Slot: "a", Do: stack.Update, Inputs: map[string]string{"cores": "inputs.cores"}},
				{Slot: "b", Do: stack.Update, Inputs: map[string]string{"cores": "inputs.cores"}},
			}},
		{Name: "service", RequiredStates: []string{"active"}, Actions: []stack.Action{{Slot: "c", Do: stack.Refresh}},
			TriggersTransition: "maintain"},
		{Name: "break", RequiredStates: []string{"active"}, Actions: []stack.Action{
			{Slot: "c", Do: stack.Update, Inputs: map[string]string{"fail_on": `"update"`}}}},
	}
	return def
}

func inState(state string) func(map[string]any) bool {
	return func(m map[string]any) bool { return m["state"] == state && m["status"] == "active" }
}

func TestStack_MachineMovesByTriggersDay2AndTimeouts(t *testing.T) {
	s := apptest.NewSite(t)
	stackID := apptest.PublishedStack(t, s, "web", machineStack(t, s))
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	user, reader := s.Token(t, s.UserA), s.Token(t, s.ReaderA)
	r := s.Call(t, "POST", "/api/v1/stack-instances", user, map[string]any{
		"stack_id": stackID, "environment_id": env.ID, "name": "shop", "parameters": map[string]any{"prefix": "shop"}})
	apptest.WantStatus(t, r, http.StatusAccepted)
	id := r.JSON(t)["id"].(string)
	base := "/api/v1/stack-instances/" + id
	if inst := s.WaitInstance(t, user, id, apptest.Status("active", "failed")); inst["state"] != "active" {
		t.Fatalf("deploy: %v", inst)
	}

	// What the state offers, and what it refuses at once.
	offers := map[string]map[string]any{}
	for _, o := range s.Call(t, "GET", base+"/operations", user, nil).JSON(t)["offers"].([]any) {
		m := o.(map[string]any)
		offers[m["kind"].(string)+" "+m["name"].(string)] = m
	}
	for _, k := range []string{"operation resize", "operation service", "transition maintain", "transition retire", "transition drain"} {
		if offers[k] == nil || offers[k]["offered"] != true {
			t.Fatalf("%s is not offered in active: %v", k, offers)
		}
	}
	if offers["transition resume"] != nil {
		t.Fatalf("resume is offered in active: %v", offers)
	}
	for _, o := range s.Call(t, "GET", base+"/operations", reader, nil).JSON(t)["offers"].([]any) {
		if o.(map[string]any)["offered"] != false {
			t.Fatalf("a reader is offered %v", o)
		}
	}
	apptest.WantStatus(t, s.Call(t, "POST", base+"/transitions", reader, map[string]any{"trigger": "maintain"}), http.StatusForbidden)
	// Another tenant's instance is not found, whatever the request holds.
	other := s.Token(t, s.AdminB)
	for _, c := range []struct{ method, path string }{{"POST", "/transitions"}, {"POST", "/operations/resize"}, {"GET", "/operations"}, {"GET", "/history"}} {
		if r := s.Ask(t, c.method, base+c.path, other); r.Status != http.StatusNotFound {
			t.Fatalf("%s %s of another tenant's instance: %d %s", c.method, c.path, r.Status, r.Body)
		}
	}
	r = s.Call(t, "POST", base+"/transitions", user, map[string]any{"trigger": "resume"})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	for _, want := range []string{`"field":"trigger"`, `"rule":"state"`, "resume is not a trigger of state active; it takes maintain, retire, drain"} {
		if !strings.Contains(string(r.Body), want) {
			t.Fatalf("the refusal %s does not say %s", r.Body, want)
		}
	}
	r = s.Call(t, "POST", base+"/operations/resize", user, map[string]any{"inputs": map[string]any{"cores": "four"}})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), `"field":"inputs.cores"`) {
		t.Fatalf("a bad input: %s", r.Body)
	}

	// resize updates a and b, one after the other, with the cores given.
	r = s.Call(t, "POST", base+"/operations/resize", user, map[string]any{"inputs": map[string]any{"cores": 4}})
	apptest.WantStatus(t, r, http.StatusAccepted)
	run := s.WaitRun(t, user, id, r.JSON(t)["id"].(string))
	if run["status"] != "succeeded" || run["kind"] != "day2" || run["operation"] != "resize" || run["source"] != "api" {
		t.Fatalf("resize: %v", run)
	}
	steps := run["steps"].([]any)
	if len(steps) != 2 {
		t.Fatalf("resize ran %v", steps)
	}
	for i, slot := range []string{"a", "b"} {
		st := steps[i].(map[string]any)
		if st["slot"] != slot || st["action"] != "update" || st["status"] != "succeeded" {
			t.Fatalf("step %d: %v", i, st)
		}
	}
	if after := steps[1].(map[string]any)["after"].([]any); len(after) != 1 || after[0] != "1-a" {
		t.Fatalf("b's update does not wait for a's: %v", after)
	}
	if cores := s.CloudCores(t); cores["shop-a"] != 4 || cores["shop-b"] != 4 || cores["shop-c"] != 2 {
		t.Fatalf("the cloud's machines after resize: %v", cores)
	}

	// maintain runs its action and moves the state, recorded with what caused it.
	r = s.Call(t, "POST", base+"/transitions", user, map[string]any{"trigger": "maintain"})
	apptest.WantStatus(t, r, http.StatusAccepted)
	maintain := r.JSON(t)["id"].(string)
	if run := s.WaitRun(t, user, id, maintain); run["status"] != "succeeded" || run["steps"].([]any)[0].(map[string]any)["action"] != "refresh" {
		t.Fatalf("maintain: %v", run)
	}
	s.WaitInstance(t, user, id, inState("maintenance"))
	h := s.History(t, user, id)
	if len(h) != 2 || h[0]["from"] != "active" || h[0]["to"] != "maintenance" || h[0]["trigger"] != "maintain" ||
		h[0]["source"] != "api" || h[0]["who"] != "user-a@example.com" || h[0]["run_id"] != maintain || len(h[0]["operations"].([]any)) != 1 {
		t.Fatalf("history after maintain: %v", h)
	}
	if h[1]["to"] != "active" || h[1]["trigger"] != "deployed" {
		t.Fatalf("the first state: %v", h[1])
	}
	var audited int
	apptest.Must(t, s.Pool.QueryRow(t.Context(), `SELECT count(*) FROM audit_events WHERE action = 'stack_instance.transition' AND target_id = $1`, id).Scan(&audited))
	if audited != 1 {
		t.Fatalf("%d transitions audited, want 1", audited)
	}
	r = s.Call(t, "POST", base+"/operations/resize", user, map[string]any{"inputs": map[string]any{"cores": 2}})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), `"field":"operation"`) || !strings.Contains(string(r.Body), "resize runs in state active") {
		t.Fatalf("resize in maintenance: %s", r.Body)
	}

	// A second resume queued behind the first finds the state active when its turn comes: it
	// is recorded, refused.
	r = s.Call(t, "POST", base+"/transitions", user, map[string]any{"trigger": "resume"})
	apptest.WantStatus(t, r, http.StatusAccepted)
	first := r.JSON(t)["id"].(string)
	r = s.Call(t, "POST", base+"/transitions", user, map[string]any{"trigger": "resume"})
	apptest.WantStatus(t, r, http.StatusAccepted)
	second := r.JSON(t)
	if second["status"] != "queued" {
		t.Fatalf("the second resume did not wait for the first: %v", second)
	}
	if run := s.WaitRun(t, user, id, first); run["status"] != "succeeded" {
		t.Fatalf("resume: %v", run)
	}
	run = s.WaitRun(t, user, id, second["id"].(string))
	if run["status"] != "refused" || run["error"] != "resume is not a trigger of state active; it takes maintain, retire, drain" {
		t.Fatalf("the second resume: %v", run)
	}
	s.WaitInstance(t, user, id, inState("active"))

	// service refreshes c, then fires maintain, recorded as fired by the day-2 operation.
	r = s.Call(t, "POST", base+"/operations/service", user, map[string]any{})
	apptest.WantStatus(t, r, http.StatusAccepted)
	s.WaitInstance(t, user, id, inState("maintenance"))
	if h := s.History(t, user, id); h[0]["trigger"] != "maintain" || h[0]["source"] != "day2" {
		t.Fatalf("after service: %v", h[0])
	}
	apptest.WantStatus(t, s.Call(t, "POST", base+"/transitions", user, map[string]any{"trigger": "resume"}), http.StatusAccepted)
	s.WaitInstance(t, user, id, inState("active"))

	// draining ends by itself after its second.
	apptest.WantStatus(t, s.Call(t, "POST", base+"/transitions", user, map[string]any{"trigger": "drain"}), http.StatusAccepted)
	deadline := time.Now().Add(2 * time.Minute)
	for h = s.History(t, user, id); h[0]["trigger"] != "drained" && time.Now().Before(deadline); h = s.History(t, user, id) {
		time.Sleep(200 * time.Millisecond)
	}
	if h[0]["trigger"] != "drained" || h[0]["source"] != "timeout" || h[0]["from"] != "draining" || h[0]["to"] != "active" || h[0]["who"] != "system" {
		t.Fatalf("draining did not time out: %v", h[0])
	}
	if h[1]["to"] != "draining" {
		t.Fatalf("before the timeout: %v", h[1])
	}

	// An action that fails leaves the state where it was and the instance degraded, saying why.
	r = s.Call(t, "POST", base+"/operations/break", user, map[string]any{})
	apptest.WantStatus(t, r, http.StatusAccepted)
	if run := s.WaitRun(t, user, id, r.JSON(t)["id"].(string)); run["status"] != "failed" || !strings.Contains(run["error"].(string), "c:") {
		t.Fatalf("break: %v", run)
	}
	inst := s.WaitInstance(t, user, id, apptest.Status("degraded"))
	if inst["state"] != "active" || !strings.HasPrefix(inst["error"].(string), "The day-2 operation break stopped: c:") {
		t.Fatalf("after a failed action: %v", inst)
	}
	if h := s.History(t, user, id); h[0]["trigger"] != "drained" {
		t.Fatalf("a failed action moved the state: %v", h[0])
	}
	// A degraded instance still moves; the failed update was rolled back, every slot is
	// deployed, so a move that succeeds makes it active again.
	apptest.WantStatus(t, s.Call(t, "POST", base+"/transitions", user, map[string]any{"trigger": "maintain"}), http.StatusAccepted)
	inst = s.WaitInstance(t, user, id, func(m map[string]any) bool { return m["state"] == "maintenance" })
	if inst["status"] != "active" || inst["error"] != "" {
		t.Fatalf("after a move of a degraded instance: %v", inst)
	}
}
