package server_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"nimbus/app/environment"
	"nimbus/app/stack"
)

// machineStack is webStack with actions on its transitions, a state left by itself after a
// second, and day-2 operations: resize (a and b's cores), service (refresh c, then maintain)
// and break (an update of c that fails).
func machineStack(t *testing.T, s *site) stack.Definition {
	def := webStack(t, s, 0)
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

// waitRun polls an instance's runs until the run id has ended and returns it.
func (s *site) waitRun(t *testing.T, token, id, run string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		for _, r := range s.call(t, "GET", "/api/v1/stack-instances/"+id+"/runs", token, nil).json(t)["runs"].([]any) {
			if m := r.(map[string]any); m["id"] == run && m["finished_at"] != nil {
				return m
			}
		}
		time.Sleep(150 * time.Millisecond)
	}
	t.Fatalf("run %s of %s did not end in 5 minutes", run, id)
	return nil
}

// history returns an instance's state changes, newest first.
func (s *site) history(t *testing.T, token, id string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, h := range s.call(t, "GET", "/api/v1/stack-instances/"+id+"/history", token, nil).json(t)["history"].([]any) {
		out = append(out, h.(map[string]any))
	}
	return out
}

// cloudCores reads the cores of each machine in the simulated cloud, by name.
func (s *site) cloudCores(t *testing.T) map[string]float64 {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(s.cloud, "machine", "*.json"))
	out := map[string]float64{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		must(t, err)
		var m struct {
			Name  string  `json:"name"`
			Cores float64 `json:"cores"`
		}
		must(t, json.Unmarshal(raw, &m))
		out[m.Name] = m.Cores
	}
	return out
}

func inState(state string) func(map[string]any) bool {
	return func(m map[string]any) bool { return m["state"] == state && m["status"] == "active" }
}

func TestStack_MachineMovesByTriggersDay2AndTimeouts(t *testing.T) {
	s := newSite(t)
	stackID := publishedStack(t, s, "web", machineStack(t, s))
	env, err := environment.NewService(s.pool).Create(t.Context(), s.adminA, s.a.ID, "dev")
	must(t, err)
	user, reader := s.token(t, s.userA), s.token(t, s.readerA)
	r := s.call(t, "POST", "/api/v1/stack-instances", user, map[string]any{
		"stack_id": stackID, "environment_id": env.ID, "name": "shop", "parameters": map[string]any{"prefix": "shop"}})
	wantStatus(t, r, http.StatusAccepted)
	id := r.json(t)["id"].(string)
	base := "/api/v1/stack-instances/" + id
	if inst := s.waitInstance(t, user, id, status("active", "failed")); inst["state"] != "active" {
		t.Fatalf("deploy: %v", inst)
	}

	// What the state offers, and what it refuses at once.
	offers := map[string]map[string]any{}
	for _, o := range s.call(t, "GET", base+"/operations", user, nil).json(t)["offers"].([]any) {
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
	for _, o := range s.call(t, "GET", base+"/operations", reader, nil).json(t)["offers"].([]any) {
		if o.(map[string]any)["offered"] != false {
			t.Fatalf("a reader is offered %v", o)
		}
	}
	wantStatus(t, s.call(t, "POST", base+"/transitions", reader, map[string]any{"trigger": "maintain"}), http.StatusForbidden)
	// Another tenant's instance is not found, whatever the request holds.
	other := s.token(t, s.adminB)
	for _, c := range []struct{ method, path string }{{"POST", "/transitions"}, {"POST", "/operations/resize"}, {"GET", "/operations"}, {"GET", "/history"}} {
		if r := s.ask(t, c.method, base+c.path, other); r.status != http.StatusNotFound {
			t.Fatalf("%s %s of another tenant's instance: %d %s", c.method, c.path, r.status, r.body)
		}
	}
	r = s.call(t, "POST", base+"/transitions", user, map[string]any{"trigger": "resume"})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	for _, want := range []string{`"field":"trigger"`, `"rule":"state"`, "resume is not a trigger of state active; it takes maintain, retire, drain"} {
		if !strings.Contains(string(r.body), want) {
			t.Fatalf("the refusal %s does not say %s", r.body, want)
		}
	}
	r = s.call(t, "POST", base+"/operations/resize", user, map[string]any{"inputs": map[string]any{"cores": "four"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.body), `"field":"inputs.cores"`) {
		t.Fatalf("a bad input: %s", r.body)
	}

	// resize updates a and b, one after the other, with the cores given.
	r = s.call(t, "POST", base+"/operations/resize", user, map[string]any{"inputs": map[string]any{"cores": 4}})
	wantStatus(t, r, http.StatusAccepted)
	run := s.waitRun(t, user, id, r.json(t)["id"].(string))
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
	if cores := s.cloudCores(t); cores["shop-a"] != 4 || cores["shop-b"] != 4 || cores["shop-c"] != 2 {
		t.Fatalf("the cloud's machines after resize: %v", cores)
	}

	// maintain runs its action and moves the state, recorded with what caused it.
	r = s.call(t, "POST", base+"/transitions", user, map[string]any{"trigger": "maintain"})
	wantStatus(t, r, http.StatusAccepted)
	maintain := r.json(t)["id"].(string)
	if run := s.waitRun(t, user, id, maintain); run["status"] != "succeeded" || run["steps"].([]any)[0].(map[string]any)["action"] != "refresh" {
		t.Fatalf("maintain: %v", run)
	}
	s.waitInstance(t, user, id, inState("maintenance"))
	h := s.history(t, user, id)
	if len(h) != 2 || h[0]["from"] != "active" || h[0]["to"] != "maintenance" || h[0]["trigger"] != "maintain" ||
		h[0]["source"] != "api" || h[0]["who"] != "user-a@example.com" || h[0]["run_id"] != maintain || len(h[0]["operations"].([]any)) != 1 {
		t.Fatalf("history after maintain: %v", h)
	}
	if h[1]["to"] != "active" || h[1]["trigger"] != "deployed" {
		t.Fatalf("the first state: %v", h[1])
	}
	var audited int
	must(t, s.pool.QueryRow(t.Context(), `SELECT count(*) FROM audit_events WHERE action = 'stack_instance.transition' AND target_id = $1`, id).Scan(&audited))
	if audited != 1 {
		t.Fatalf("%d transitions audited, want 1", audited)
	}
	r = s.call(t, "POST", base+"/operations/resize", user, map[string]any{"inputs": map[string]any{"cores": 2}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.body), `"field":"operation"`) || !strings.Contains(string(r.body), "resize runs in state active") {
		t.Fatalf("resize in maintenance: %s", r.body)
	}

	// A second resume queued behind the first finds the state active when its turn comes: it
	// is recorded, refused.
	r = s.call(t, "POST", base+"/transitions", user, map[string]any{"trigger": "resume"})
	wantStatus(t, r, http.StatusAccepted)
	first := r.json(t)["id"].(string)
	r = s.call(t, "POST", base+"/transitions", user, map[string]any{"trigger": "resume"})
	wantStatus(t, r, http.StatusAccepted)
	second := r.json(t)
	if second["status"] != "queued" {
		t.Fatalf("the second resume did not wait for the first: %v", second)
	}
	if run := s.waitRun(t, user, id, first); run["status"] != "succeeded" {
		t.Fatalf("resume: %v", run)
	}
	run = s.waitRun(t, user, id, second["id"].(string))
	if run["status"] != "refused" || run["error"] != "resume is not a trigger of state active; it takes maintain, retire, drain" {
		t.Fatalf("the second resume: %v", run)
	}
	s.waitInstance(t, user, id, inState("active"))

	// service refreshes c, then fires maintain, recorded as fired by the day-2 operation.
	r = s.call(t, "POST", base+"/operations/service", user, map[string]any{})
	wantStatus(t, r, http.StatusAccepted)
	s.waitInstance(t, user, id, inState("maintenance"))
	if h := s.history(t, user, id); h[0]["trigger"] != "maintain" || h[0]["source"] != "day2" {
		t.Fatalf("after service: %v", h[0])
	}
	wantStatus(t, s.call(t, "POST", base+"/transitions", user, map[string]any{"trigger": "resume"}), http.StatusAccepted)
	s.waitInstance(t, user, id, inState("active"))

	// draining ends by itself after its second.
	wantStatus(t, s.call(t, "POST", base+"/transitions", user, map[string]any{"trigger": "drain"}), http.StatusAccepted)
	deadline := time.Now().Add(2 * time.Minute)
	for h = s.history(t, user, id); h[0]["trigger"] != "drained" && time.Now().Before(deadline); h = s.history(t, user, id) {
		time.Sleep(200 * time.Millisecond)
	}
	if h[0]["trigger"] != "drained" || h[0]["source"] != "timeout" || h[0]["from"] != "draining" || h[0]["to"] != "active" || h[0]["who"] != "system" {
		t.Fatalf("draining did not time out: %v", h[0])
	}
	if h[1]["to"] != "draining" {
		t.Fatalf("before the timeout: %v", h[1])
	}

	// An action that fails leaves the state where it was and the instance degraded, saying why.
	r = s.call(t, "POST", base+"/operations/break", user, map[string]any{})
	wantStatus(t, r, http.StatusAccepted)
	if run := s.waitRun(t, user, id, r.json(t)["id"].(string)); run["status"] != "failed" || !strings.Contains(run["error"].(string), "c:") {
		t.Fatalf("break: %v", run)
	}
	inst := s.waitInstance(t, user, id, status("degraded"))
	if inst["state"] != "active" || !strings.HasPrefix(inst["error"].(string), "The day-2 operation break stopped: c:") {
		t.Fatalf("after a failed action: %v", inst)
	}
	if h := s.history(t, user, id); h[0]["trigger"] != "drained" {
		t.Fatalf("a failed action moved the state: %v", h[0])
	}
	// A degraded instance still moves; the failed update was rolled back, every slot is
	// deployed, so a move that succeeds makes it active again.
	wantStatus(t, s.call(t, "POST", base+"/transitions", user, map[string]any{"trigger": "maintain"}), http.StatusAccepted)
	inst = s.waitInstance(t, user, id, func(m map[string]any) bool { return m["state"] == "maintenance" })
	if inst["status"] != "active" || inst["error"] != "" {
		t.Fatalf("after a move of a degraded instance: %v", inst)
	}
}
