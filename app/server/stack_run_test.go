package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"nimbus/app/environment"
	"nimbus/app/stack"
)

// publishedStack records a provider stack with one published version of def, straight in the
// database: these tests are about running stacks, not about making them.
func publishedStack(t *testing.T, s *site, name string, def stack.Definition) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	var id uuid.UUID
	must(t, s.pool.QueryRow(ctx, `INSERT INTO stacks (provider_id, name, display_name)
		SELECT id, $1, $1 FROM semantic_providers WHERE name = 'simcloud' RETURNING id`, name).Scan(&id))
	ops := def.Operations
	def.Operations = nil
	raw, _ := json.Marshal(def)
	_, err := s.pool.Exec(ctx, `INSERT INTO stack_versions (stack_id, version, definition, changelog) VALUES ($1, 1, $2, 'first')`, id, raw)
	must(t, err)
	for i, o := range ops {
		actions, _ := json.Marshal(o.Actions)
		schema := o.InputSchema
		if schema == nil {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		_, err := s.pool.Exec(ctx, `INSERT INTO stack_day2_operations (stack_id, version, name, input_schema, required_states, actions, triggers_transition, position)
			VALUES ($1, 1, $2, $3, $4, $5, $6, $7)`, id, o.Name, schema, o.RequiredStates, actions, o.TriggersTransition, i)
		must(t, err)
	}
	return id
}

// webStack is a network, two machines on it that may deploy at once, and a third machine
// after both, with a lifecycle active ⇄ maintenance → retired.
func webStack(t *testing.T, s *site, delayMs int) stack.Definition {
	ids := builtinIDs(t, s)
	net, machine := uuid.MustParse(ids["simcloud-network"]), uuid.MustParse(ids["simcloud-machine"])
	onNet := func(suffix string) stack.Slot {
		return stack.Slot{Name: suffix, Component: machine, Version: 1, Inputs: map[string]stack.Wiring{
			"name":       {Kind: stack.Expression, Expr: `params.prefix + "-` + suffix + `"`},
			"network_id": {Kind: stack.Output, Slot: "net", Output: "network_id"},
			"delay_ms":   {Kind: stack.Literal, Value: delayMs},
			"cores":      {Kind: stack.Param, Param: "cores"},
		}}
	}
	c := onNet("c")
	c.Inputs["network_id"] = stack.Wiring{Kind: stack.Literal, Value: ""}
	c.DependsOn = []string{"a", "b"}
	return stack.Definition{
		Parameters: json.RawMessage(`{"type":"object","required":["prefix"],"properties":{"prefix":{"type":"string","pattern":"^[a-z][a-z0-9-]*$"},"cores":{"type":"integer","default":2}}}`),
		Slots: []stack.Slot{
			{Name: "net", Component: net, Version: 1, Inputs: map[string]stack.Wiring{
				"name": {Kind: stack.Expression, Expr: `params.prefix + "-net"`},
				"cidr": {Kind: stack.Literal, Value: "10.20.0.0/16"},
			}},
			onNet("a"), onNet("b"), c,
		},
		Machine: stack.Machine{
			States: []stack.State{{Name: "active", Initial: true}, {Name: "maintenance"}, {Name: "retired", Terminal: true}},
			Transitions: []stack.Transition{
				{From: "active", To: "maintenance", Trigger: "maintain"},
				{From: "maintenance", To: "active", Trigger: "resume"},
				{From: "active", To: "retired", Trigger: "retire"},
			},
		},
	}
}

// waitInstance polls a stack instance until check holds and returns it.
func (s *site) waitInstance(t testing.TB, token, id string, check func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	var inst map[string]any
	for time.Now().Before(deadline) {
		inst = s.call(t, "GET", "/api/v1/stack-instances/"+id, token, nil).json(t)
		if check(inst) {
			return inst
		}
		time.Sleep(150 * time.Millisecond)
	}
	t.Fatalf("stack instance %s did not get there in 5 minutes: %v", id, inst)
	return nil
}

func status(want ...string) func(map[string]any) bool {
	return func(m map[string]any) bool { return slices.Contains(want, m["status"].(string)) }
}

// slotOperations returns, by slot, the operation each step of the instance's newest run of kind
// ran, as the API shows it.
func (s *site) slotOperations(t *testing.T, token, id, kind string) map[string]map[string]any {
	t.Helper()
	runs := s.call(t, "GET", "/api/v1/stack-instances/"+id+"/runs", token, nil).json(t)["runs"].([]any)
	for _, r := range runs {
		run := r.(map[string]any)
		if run["kind"] != kind {
			continue
		}
		out := map[string]map[string]any{}
		for _, st := range run["steps"].([]any) {
			step := st.(map[string]any)
			if op, ok := step["operation_id"].(string); ok {
				out[step["slot"].(string)] = s.call(t, "GET", "/api/v1/operations/"+op, token, nil).json(t)
			}
		}
		return out
	}
	t.Fatalf("no %s run of %s", kind, id)
	return nil
}

func TestStack_DeploysInGraphOrderWithIndependentSlotsAtOnce(t *testing.T) {
	s := newSite(t)
	stackID := publishedStack(t, s, "web", webStack(t, s, 1500))
	env, err := environment.NewService(s.pool).Create(t.Context(), s.adminA, s.a.ID, "dev")
	must(t, err)
	user, admin := s.token(t, s.userA), s.token(t, s.adminA)

	r := s.call(t, "POST", "/api/v1/stack-instances", user, map[string]any{
		"stack_id": stackID, "environment_id": env.ID, "name": "shop", "parameters": map[string]any{"prefix": "shop", "cores": 3}})
	wantStatus(t, r, http.StatusAccepted)
	id := r.json(t)["id"].(string)
	inst := s.waitInstance(t, user, id, status("active", "failed"))
	if inst["status"] != "active" || inst["state"] != "active" {
		t.Fatalf("instance %v: want active, in its initial state", inst)
	}
	slots := map[string]map[string]any{}
	for _, sl := range inst["slots"].([]any) {
		slot := sl.(map[string]any)
		slots[slot["name"].(string)] = slot
		if slot["status"] != "deployed" {
			t.Fatalf("slot %v is not deployed", slot)
		}
	}
	netID := slots["net"]["outputs"].(map[string]any)["network_id"].(string)
	if !strings.HasPrefix(netID, "n-") {
		t.Fatalf("the network's outputs: %v", slots["net"]["outputs"])
	}
	// The machines on the network were given its ID, and the stack's cores.
	for _, name := range []string{"a", "b"} {
		d := s.call(t, "GET", "/api/v1/deployments/"+slots[name]["deployment_id"].(string), user, nil).json(t)
		params := d["parameters"].(map[string]any)
		if params["network_id"] != netID || params["name"] != "shop-"+name || params["cores"] != float64(3) {
			t.Fatalf("slot %s deployed with %v, want on %s with 3 cores", name, params, netID)
		}
	}
	ops := s.slotOperations(t, user, id, "deploy")
	at := func(slot, field string) time.Time {
		ts, err := time.Parse(time.RFC3339Nano, ops[slot][field].(string))
		must(t, err)
		return ts
	}
	if !at("net", "finished_at").Before(at("a", "started_at")) || !at("net", "finished_at").Before(at("b", "started_at")) {
		t.Fatal("a machine started before the network it joins was deployed")
	}
	if !at("a", "started_at").Before(at("b", "finished_at")) || !at("b", "started_at").Before(at("a", "finished_at")) {
		t.Fatalf("a (%s–%s) and b (%s–%s) did not run at once", at("a", "started_at"), at("a", "finished_at"), at("b", "started_at"), at("b", "finished_at"))
	}
	if c := at("c", "started_at"); c.Before(at("a", "finished_at")) || c.Before(at("b", "finished_at")) {
		t.Fatal("c started before both machines it depends on were deployed")
	}
	if got := len(s.cloudFiles(t)); got != 7 {
		t.Fatalf("the cloud holds %d things, want a network, three machines and their disks", got)
	}

	// What a stack holds is changed through the stack, and stays while the stack needs it.
	r = s.call(t, "POST", "/api/v1/deployments/"+slots["a"]["deployment_id"].(string)+"/destroy", admin, nil)
	if r.status != http.StatusUnprocessableEntity || !strings.Contains(string(r.body), "through the instance") {
		t.Fatalf("destroying a slot's deployment by hand: %d %s", r.status, r.body)
	}
	r = s.call(t, "POST", "/api/v1/environments/"+env.ID.String()+"/decommission", admin, nil)
	if r.status != http.StatusUnprocessableEntity || !strings.Contains(string(r.body), "holds stack instances shop") {
		t.Fatalf("decommissioning the environment under the stack: %d %s", r.status, r.body)
	}

	r = s.call(t, "DELETE", "/api/v1/stack-instances/"+id, admin, nil)
	wantStatus(t, r, http.StatusAccepted)
	inst = s.waitInstance(t, admin, id, status("destroyed", "failed"))
	if inst["status"] != "destroyed" {
		t.Fatalf("destroy: %v", inst)
	}
	if files := s.cloudFiles(t); len(files) != 0 {
		t.Fatalf("left in the cloud after destroy: %v", files)
	}
	// Nothing deploys the machine's version any more, but the stack's version would again.
	r = s.call(t, "POST", "/api/v1/components/"+slots["a"]["component_id"].(string)+"/versions/1/archive", s.token(t, s.admin), nil)
	if r.status != http.StatusUnprocessableEntity || !strings.Contains(string(r.body), "slot of stacks web") {
		t.Fatalf("archiving a component version a stack pins: %d %s", r.status, r.body)
	}
	ops = s.slotOperations(t, admin, id, "destroy")
	if !at("c", "finished_at").Before(at("a", "started_at")) || !at("a", "finished_at").Before(at("net", "started_at")) ||
		!at("b", "finished_at").Before(at("net", "started_at")) {
		t.Fatal("destroy did not go in reverse order")
	}
}

func TestStack_SlotFailingOnFirstDeployTakesDownWhatWasMade(t *testing.T) {
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
	inst := s.waitInstance(t, user, id, func(m map[string]any) bool {
		return m["status"] == "failed" && strings.Contains(m["error"].(string), "What it had made was removed.")
	})
	if !strings.Contains(inst["error"].(string), "c:") || !strings.Contains(inst["error"].(string), "injected failure") {
		t.Fatalf("the instance does not say which slot failed and why: %v", inst["error"])
	}
	if files := s.cloudFiles(t); len(files) != 0 {
		t.Fatalf("left in the cloud after a failed first deploy: %v", files)
	}
	for _, sl := range inst["slots"].([]any) {
		if slot := sl.(map[string]any); slot["status"] != "destroyed" && slot["status"] != "failed" {
			t.Fatalf("slot %v after compensation", slot)
		}
	}
	if inst["state"] != "" {
		t.Fatalf("a stack never deployed entered state %v", inst["state"])
	}
}

// publishVersion records version n of a stack straight in the database.
func publishVersion(t *testing.T, s *site, stackID uuid.UUID, n int, def stack.Definition) {
	t.Helper()
	def.Operations = nil
	raw, _ := json.Marshal(def)
	_, err := s.pool.Exec(context.Background(), `INSERT INTO stack_versions (stack_id, version, definition, changelog) VALUES ($1, $2, $3, 'next')`, stackID, n, raw)
	must(t, err)
}

// machineCores reads the cores of the simulated machine named name.
func (s *site) machineCores(t *testing.T, name string) float64 {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(s.cloud, "machine", "*.json"))
	for _, f := range files {
		raw, err := os.ReadFile(f)
		must(t, err)
		var m map[string]any
		must(t, json.Unmarshal(raw, &m))
		if m["name"] == name {
			return m["cores"].(float64)
		}
	}
	t.Fatalf("no machine named %s in the cloud", name)
	return 0
}

func TestStack_UpgradeAddsASlotAndAFailedUpgradeRollsBack(t *testing.T) {
	s := newSite(t)
	v1 := webStack(t, s, 0)
	stackID := publishedStack(t, s, "web", v1)
	env, err := environment.NewService(s.pool).Create(t.Context(), s.adminA, s.a.ID, "dev")
	must(t, err)
	user, admin := s.token(t, s.userA), s.token(t, s.adminA)
	r := s.call(t, "POST", "/api/v1/stack-instances", user, map[string]any{
		"stack_id": stackID, "environment_id": env.ID, "name": "shop", "parameters": map[string]any{"prefix": "shop"}})
	wantStatus(t, r, http.StatusAccepted)
	id := r.json(t)["id"].(string)
	if inst := s.waitInstance(t, user, id, status("active", "failed")); inst["status"] != "active" {
		t.Fatalf("deploy: %v", inst)
	}

	// Version 2 adds a machine after c.
	v2 := webStack(t, s, 0)
	d := v2.Slots[3]
	d.Name, d.DependsOn = "d", []string{"c"}
	d.Inputs = map[string]stack.Wiring{"name": {Kind: stack.Expression, Expr: `params.prefix + "-d"`}}
	v2.Slots = append(v2.Slots, d)
	publishVersion(t, s, stackID, 2, v2)
	plan := s.call(t, "GET", "/api/v1/stack-instances/"+id+"/upgrade", user, nil).json(t)
	changes := map[string]string{}
	for _, p := range plan["slots"].([]any) {
		changes[p.(map[string]any)["slot"].(string)] = p.(map[string]any)["change"].(string)
	}
	if changes["d"] != "added" || changes["a"] != "untouched" || plan["to"] != float64(2) {
		t.Fatalf("upgrade plan %v", plan)
	}
	wantStatus(t, s.call(t, "POST", "/api/v1/stack-instances/"+id+"/upgrade", user, map[string]any{}), http.StatusForbidden)
	wantStatus(t, s.call(t, "POST", "/api/v1/stack-instances/"+id+"/upgrade", admin, map[string]any{"version": 2}), http.StatusAccepted)
	inst := s.waitInstance(t, admin, id, func(m map[string]any) bool { return m["status"] != "upgrading" })
	if inst["status"] != "active" || inst["version"] != float64(2) || len(inst["slots"].([]any)) != 5 {
		t.Fatalf("after the upgrade: %v", inst)
	}
	s.machineCores(t, "shop-d")

	// Version 3 gives a and b more cores and adds a machine that cannot be made: the upgrade
	// fails, and the machines that got their cores get their old ones back.
	v3 := webStack(t, s, 0)
	v3.Slots = append(v3.Slots, d)
	for _, i := range []int{1, 2} {
		v3.Slots[i].Inputs["cores"] = stack.Wiring{Kind: stack.Literal, Value: 6}
	}
	e := d
	e.Name, e.DependsOn = "e", []string{"a", "b"}
	e.Inputs = map[string]stack.Wiring{"name": {Kind: stack.Expression, Expr: `params.prefix + "-e"`}, "fail_on": {Kind: stack.Literal, Value: "create"}}
	v3.Slots = append(v3.Slots, e)
	publishVersion(t, s, stackID, 3, v3)
	wantStatus(t, s.call(t, "POST", "/api/v1/stack-instances/"+id+"/upgrade", admin, map[string]any{}), http.StatusAccepted)
	inst = s.waitInstance(t, admin, id, func(m map[string]any) bool {
		return m["status"] != "upgrading" && strings.Contains(m["error"].(string), "rolled back")
	})
	if inst["status"] != "active" || inst["version"] != float64(2) || !strings.Contains(inst["error"].(string), "e:") {
		t.Fatalf("after the failed upgrade: %v", inst)
	}
	for _, name := range []string{"shop-a", "shop-b"} {
		if got := s.machineCores(t, name); got != 2 {
			t.Fatalf("%s has %v cores after the rollback, want its 2 again", name, got)
		}
	}
	if got := len(s.cloudFiles(t)); got != 9 {
		t.Fatalf("the cloud holds %d things after the rollback, want the network and four machines with their disks", got)
	}
}

// slotsByName returns an instance's slots by name, as the API shows them.
func slotsByName(inst map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, sl := range inst["slots"].([]any) {
		slot := sl.(map[string]any)
		out[slot["name"].(string)] = slot
	}
	return out
}

// upgradeAndRollBack upgrades an instance to version and waits for the rollback its failure
// starts to end; the instance must be active at version 1 again.
func (s *site) upgradeAndRollBack(t *testing.T, token, id string, version int, failed string) map[string]any {
	t.Helper()
	wantStatus(t, s.call(t, "POST", "/api/v1/stack-instances/"+id+"/upgrade", token, map[string]any{"version": version}), http.StatusAccepted)
	inst := s.waitInstance(t, token, id, func(m map[string]any) bool {
		return m["status"] != "upgrading" || strings.Contains(m["error"].(string), "Rolling back stopped")
	})
	if inst["status"] != "active" || inst["version"] != float64(1) || !strings.Contains(inst["error"].(string), "rolled back to version 1") ||
		!strings.Contains(inst["error"].(string), failed+":") {
		t.Fatalf("after the failed upgrade: %v", inst)
	}
	for _, sl := range inst["slots"].([]any) {
		if slot := sl.(map[string]any); slot["status"] != "deployed" {
			t.Fatalf("slot %v after the rollback", slot)
		}
	}
	return inst
}

func TestStack_FailedUpgradeRollsAReplacedSlotBackOntoItsOldComponent(t *testing.T) {
	s := newSite(t)
	ids := builtinIDs(t, s)
	stackID := publishedStack(t, s, "web", webStack(t, s, 0))
	env, err := environment.NewService(s.pool).Create(t.Context(), s.adminA, s.a.ID, "dev")
	must(t, err)
	user, admin := s.token(t, s.userA), s.token(t, s.adminA)
	r := s.call(t, "POST", "/api/v1/stack-instances", user, map[string]any{
		"stack_id": stackID, "environment_id": env.ID, "name": "shop", "parameters": map[string]any{"prefix": "shop"}})
	wantStatus(t, r, http.StatusAccepted)
	id := r.json(t)["id"].(string)
	before := slotsByName(s.waitInstance(t, user, id, status("active", "failed")))
	if before["a"]["status"] != "deployed" {
		t.Fatalf("deploy: %v", before)
	}

	// Version 2 puts a network in slot a, and adds after it a machine that cannot be made: the
	// upgrade destroys machine a, deploys the network, then fails.
	v2 := webStack(t, s, 0)
	v2.Slots[1] = stack.Slot{Name: "a", Component: uuid.MustParse(ids["simcloud-network"]), Version: 1, Inputs: map[string]stack.Wiring{
		"name": {Kind: stack.Expression, Expr: `params.prefix + "-a-net"`},
		"cidr": {Kind: stack.Literal, Value: "10.30.0.0/16"},
	}}
	e := v2.Slots[3]
	e.Name, e.DependsOn = "e", []string{"a"}
	e.Inputs = map[string]stack.Wiring{"name": {Kind: stack.Expression, Expr: `params.prefix + "-e"`}, "fail_on": {Kind: stack.Literal, Value: "create"}}
	v2.Slots = append(v2.Slots, e)
	publishVersion(t, s, stackID, 2, v2)
	plan := s.call(t, "GET", "/api/v1/stack-instances/"+id+"/upgrade", user, nil).json(t)
	if p := plan["slots"].([]any)[1].(map[string]any); p["slot"] != "a" || p["change"] != "replaced" {
		t.Fatalf("upgrade plan %v", plan)
	}
	inst := s.upgradeAndRollBack(t, admin, id, 2, "e")

	// Slot a holds a machine again: a new deployment under its old name, of the old
	// component, wired from the stack's parameters and the network.
	a := slotsByName(inst)["a"]
	if a["deployment_id"] == before["a"]["deployment_id"] || a["deployment"] != "shop-a" {
		t.Fatalf("slot a after the rollback: %v, before the upgrade: %v", a, before["a"])
	}
	dep := s.call(t, "GET", "/api/v1/deployments/"+a["deployment_id"].(string), user, nil).json(t)
	params := dep["parameters"].(map[string]any)
	if dep["component_id"] != ids["simcloud-machine"] || dep["version"] != float64(1) || params["name"] != "shop-a" ||
		params["network_id"] != before["net"]["outputs"].(map[string]any)["network_id"] {
		t.Fatalf("slot a's deployment after the rollback: %v", dep)
	}
	if got := s.machineCores(t, "shop-a"); got != 2 {
		t.Fatalf("shop-a has %v cores after the rollback, want 2", got)
	}
	files := s.cloudFiles(t)
	networks := slices.DeleteFunc(slices.Clone(files), func(f string) bool { return f != "network" })
	if len(files) != 7 || len(networks) != 1 {
		t.Fatalf("the cloud holds %v after the rollback, want the network and three machines with their disks", files)
	}
	// The network the upgrade put in slot a went first, then the machine came back.
	ops := s.slotOperations(t, admin, id, "rollback")
	if ops["e"]["kind"] != "destroy" || ops["a"]["kind"] != "deploy" || ops["a"]["deployment_id"] != a["deployment_id"] {
		t.Fatalf("the rollback's operations: %v", ops)
	}
}

func TestStack_FailedUpgradeRedeploysADroppedSlotItHadDestroyed(t *testing.T) {
	s := newSite(t)
	ids := builtinIDs(t, s)
	net, machine := uuid.MustParse(ids["simcloud-network"]), uuid.MustParse(ids["simcloud-machine"])
	keep := stack.Slot{Name: "net", Component: net, Version: 1, Inputs: map[string]stack.Wiring{
		"name": {Kind: stack.Literal, Value: "keep-net"}, "cidr": {Kind: stack.Literal, Value: "10.40.0.0/16"}}}
	machines := stack.Machine{States: []stack.State{{Name: "active", Initial: true}}}
	// Machine y cannot be destroyed; machine x is named after y's, so it reads from y.
	stackID := publishedStack(t, s, "pair", stack.Definition{
		Parameters: json.RawMessage(`{"type":"object","properties":{}}`),
		Slots: []stack.Slot{keep,
			{Name: "y", Component: machine, Version: 1, Inputs: map[string]stack.Wiring{
				"name": {Kind: stack.Literal, Value: "pair-y"}, "fail_on": {Kind: stack.Literal, Value: "delete"}}},
			{Name: "x", Component: machine, Version: 1, Inputs: map[string]stack.Wiring{
				"name": {Kind: stack.Expression, Expr: `slots.y.outputs.machine_id + "-x"`}}},
		},
		Machine: machines,
	})
	env, err := environment.NewService(s.pool).Create(t.Context(), s.adminA, s.a.ID, "dev")
	must(t, err)
	admin := s.token(t, s.adminA)
	r := s.call(t, "POST", "/api/v1/stack-instances", admin, map[string]any{"stack_id": stackID, "environment_id": env.ID, "name": "pair"})
	wantStatus(t, r, http.StatusAccepted)
	id := r.json(t)["id"].(string)
	before := slotsByName(s.waitInstance(t, admin, id, status("active", "failed")))
	if before["x"]["status"] != "deployed" {
		t.Fatalf("deploy: %v", before)
	}
	xName := before["y"]["outputs"].(map[string]any)["machine_id"].(string) + "-x"
	s.machineCores(t, xName)

	// Version 2 drops both machines. Dropped slots go last, x before y, which it reads from:
	// x is destroyed, then y's destroy fails.
	publishVersion(t, s, stackID, 2, stack.Definition{Parameters: json.RawMessage(`{"type":"object","properties":{}}`),
		Slots: []stack.Slot{keep}, Machine: machines})
	inst := s.upgradeAndRollBack(t, admin, id, 2, "y")

	after := slotsByName(inst)
	if after["x"]["deployment_id"] == before["x"]["deployment_id"] || after["y"]["deployment_id"] != before["y"]["deployment_id"] {
		t.Fatalf("slots after the rollback: %v, before the upgrade: %v", after, before)
	}
	s.machineCores(t, xName)
	if files := s.cloudFiles(t); len(files) != 5 {
		t.Fatalf("the cloud holds %v after the rollback, want the network and both machines with their disks", files)
	}
	// The upgrade destroyed x before y's destroy failed; the rollback applied y again, then
	// deployed x anew from y's outputs.
	ups := s.slotOperations(t, admin, id, "upgrade")
	if ups["x"]["kind"] != "destroy" || ups["x"]["status"] != "succeeded" || ups["y"]["status"] != "failed" {
		t.Fatalf("the upgrade's operations: %v", ups)
	}
	ops := s.slotOperations(t, admin, id, "rollback")
	if ops["y"]["kind"] != "update" || ops["x"]["kind"] != "deploy" {
		t.Fatalf("the rollback's operations: %v", ops)
	}
	yDone, err := time.Parse(time.RFC3339Nano, ops["y"]["finished_at"].(string))
	must(t, err)
	xStart, err := time.Parse(time.RFC3339Nano, ops["x"]["started_at"].(string))
	must(t, err)
	if xStart.Before(yDone) {
		t.Fatal("x was deployed again before y, which it reads from, was back")
	}
}

func TestStack_RollbackThatFailsLeavesTheInstanceDegraded(t *testing.T) {
	s := newSite(t)
	stackID := publishedStack(t, s, "web", webStack(t, s, 0))
	env, err := environment.NewService(s.pool).Create(t.Context(), s.adminA, s.a.ID, "dev")
	must(t, err)
	admin := s.token(t, s.adminA)
	r := s.call(t, "POST", "/api/v1/stack-instances", admin, map[string]any{
		"stack_id": stackID, "environment_id": env.ID, "name": "shop", "parameters": map[string]any{"prefix": "shop"}})
	wantStatus(t, r, http.StatusAccepted)
	id := r.json(t)["id"].(string)
	if inst := s.waitInstance(t, admin, id, status("active", "failed")); inst["status"] != "active" {
		t.Fatalf("deploy: %v", inst)
	}
	// Version 2 adds a machine that cannot be destroyed, and after it one that cannot be made:
	// the rollback cannot take the first down.
	v2 := webStack(t, s, 0)
	d := v2.Slots[3]
	d.Name, d.DependsOn = "d", []string{"c"}
	d.Inputs = map[string]stack.Wiring{"name": {Kind: stack.Expression, Expr: `params.prefix + "-d"`}, "fail_on": {Kind: stack.Literal, Value: "delete"}}
	e := d
	e.Name, e.DependsOn = "e", []string{"d"}
	e.Inputs = map[string]stack.Wiring{"name": {Kind: stack.Expression, Expr: `params.prefix + "-e"`}, "fail_on": {Kind: stack.Literal, Value: "create"}}
	v2.Slots = append(v2.Slots, d, e)
	publishVersion(t, s, stackID, 2, v2)
	wantStatus(t, s.call(t, "POST", "/api/v1/stack-instances/"+id+"/upgrade", admin, map[string]any{"version": 2}), http.StatusAccepted)
	inst := s.waitInstance(t, admin, id, func(m map[string]any) bool { return m["status"] != "upgrading" })
	msg := inst["error"].(string)
	if inst["status"] != "degraded" || inst["version"] != float64(1) || !strings.Contains(msg, "e:") ||
		!strings.Contains(msg, "Rolling back stopped too: d:") {
		t.Fatalf("after the failed rollback: %v", inst)
	}
}

// zoneEnvironment opens an environment in a published landing zone whose resolvers hand out
// names and addresses from a pool, and returns it with the pool's ID. The environment comes
// with a network of its own, holding one range of the pool.
func zoneEnvironment(t *testing.T, s *site) (env, pool string) {
	t.Helper()
	root, admin := s.token(t, s.admin), s.token(t, s.adminA)
	r := s.call(t, "POST", "/api/v1/landing-zones", root, map[string]any{"name": "sim-eu", "provider": "simcloud"})
	wantStatus(t, r, http.StatusCreated)
	zone := r.json(t)["id"].(string)
	r = s.call(t, "POST", "/api/v1/ipam/pools", root, map[string]any{"name": "eu-net", "prefix": "10.60.0.0/16", "landing_zone_id": zone})
	wantStatus(t, r, http.StatusCreated)
	pool = r.json(t)["id"].(string)
	wantStatus(t, s.call(t, "PUT", "/api/v1/landing-zones/"+zone+"/resolvers/ipam", root, map[string]any{"pool_id": pool, "subnet_bits": 24}), http.StatusOK)
	wantStatus(t, s.call(t, "PUT", "/api/v1/landing-zones/"+zone+"/resolvers/naming", root,
		map[string]any{"pattern": "{tenant}-{env}-{seq:02d}", "domain": "eu.example.com"}), http.StatusOK)
	ids := builtinIDs(t, s)
	r = s.call(t, "POST", "/api/v1/landing-zones/"+zone+"/templates", root, map[string]any{"name": "base", "mandatory_components": []map[string]any{
		{"component_id": ids["simcloud-network"], "name": "base", "parameters": map[string]any{"name": "base-net"}}}})
	wantStatus(t, r, http.StatusCreated)
	template := r.json(t)["id"].(string)
	wantStatus(t, s.call(t, "POST", "/api/v1/landing-zones/"+zone+"/publish", root, nil), http.StatusAccepted)
	s.waitZoneServices(t, root, zone)
	r = s.call(t, "POST", "/api/v1/environments", admin, map[string]any{"tenant_id": s.a.ID, "name": "dev", "template_id": template})
	wantStatus(t, r, http.StatusAccepted)
	env = r.json(t)["id"].(string)
	if got := s.waitEnvironment(t, admin, env); got["status"] != "active" {
		t.Fatalf("the environment: %v", got)
	}
	return env, pool
}

func TestStack_FailedSlotInAZoneLeavesNoAddressesHeld(t *testing.T) {
	s := newSite(t)
	ids := builtinIDs(t, s)
	net, machine := uuid.MustParse(ids["simcloud-network"]), uuid.MustParse(ids["simcloud-machine"])
	// The zone names the machines and hands out the network's range and the machines' addresses.
	onNet := func(name string, fail string) stack.Slot {
		return stack.Slot{Name: name, Component: machine, Version: 1, Inputs: map[string]stack.Wiring{
			"network_id": {Kind: stack.Output, Slot: "net", Output: "network_id"},
			"fail_on":    {Kind: stack.Literal, Value: fail},
		}}
	}
	bad := onNet("c", "create")
	bad.DependsOn = []string{"a", "b"}
	stackID := publishedStack(t, s, "zoned", stack.Definition{
		Parameters: json.RawMessage(`{"type":"object","properties":{}}`),
		Slots: []stack.Slot{
			{Name: "net", Component: net, Version: 1, Inputs: map[string]stack.Wiring{"name": {Kind: stack.Literal, Value: "zoned-net"}}},
			onNet("a", ""), onNet("b", ""), bad,
		},
		Machine: stack.Machine{States: []stack.State{{Name: "active", Initial: true}}},
	})
	env, pool := zoneEnvironment(t, s)
	user := s.token(t, s.userA)
	r := s.call(t, "POST", "/api/v1/stack-instances", user, map[string]any{"stack_id": stackID, "environment_id": env, "name": "zoned"})
	wantStatus(t, r, http.StatusAccepted)
	id := r.json(t)["id"].(string)
	inst := s.waitInstance(t, user, id, func(m map[string]any) bool {
		return m["status"] == "failed" && strings.Contains(m["error"].(string), "What it had made was removed.")
	})
	if files := s.cloudFiles(t); len(files) != 1 || files[0] != "network" {
		t.Fatalf("the cloud holds %v, want only the environment's own network (%v)", files, inst)
	}
	if n := poolAllocations(t, s, pool); n != 1 {
		t.Fatalf("%d ranges and addresses of the zone's pool held after the failed stack was taken down, want only the environment's own network's", n)
	}
	// What it deployed had been given its addresses from the pool while it stood.
	var held int
	must(t, s.pool.QueryRow(context.Background(), `SELECT count(*) FROM deployed_components WHERE stack_instance_id = $1 AND parameters->>'ip_address' LIKE '10.60.%'`, id).Scan(&held))
	if held < 2 {
		t.Fatalf("only %d of the stack's machines had an address from the pool: the test proves nothing", held)
	}
}
