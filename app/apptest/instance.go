package apptest

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

	"nimbus/app/domain/stack"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/orchestration/instance"
)

// WebStackID is a provider stack of one slot, the shared machine, with a lifecycle active ⇄
// maintenance and a day-2 operation resize in active; published as version 1.
func (w *World) WebStackID(t *testing.T) uuid.UUID {
	return Fixture(w, "webStack", func() uuid.UUID {
		ctx := context.Background()
		def := stack.Definition{
			Parameters: json.RawMessage(`{"type":"object","properties":{}}`),
			Slots: []stack.Slot{{Name: "web", Component: w.Shared.ID, Version: 1, Inputs: map[string]stack.Wiring{
				"name": {Kind: stack.Literal, Value: "web"}}}},
			Machine: stack.Machine{
				States: []stack.State{{Name: "active", Initial: true}, {Name: "maintenance"}},
				Transitions: []stack.Transition{
					{From: "active", To: "maintenance", Trigger: "maintain"},
					{From: "maintenance", To: "active", Trigger: "resume"},
				},
			},
		}
		raw, _ := json.Marshal(def)
		var id uuid.UUID
		Must(t, w.Pool.QueryRow(ctx, `INSERT INTO stacks (provider_id, name) SELECT id, 'web' FROM semantic_providers WHERE name = 'simcloud' RETURNING id`).Scan(&id))
		_, err := w.Pool.Exec(ctx, `INSERT INTO stack_versions (stack_id, version, definition, changelog) VALUES ($1, 1, $2, 'first')`, id, raw)
		Must(t, err)
		_, err = w.Pool.Exec(ctx, `INSERT INTO stack_day2_operations (stack_id, version, name, input_schema, required_states, actions)
			VALUES ($1, 1, 'resize', '{"type":"object","properties":{"cores":{"type":"integer"}}}', '{active}',
			'[{"slot":"web","do":"update","inputs":{"cores":"inputs.cores"}}]')`, id)
		Must(t, err)
		return id
	})
}

// DeployStack has A's user deploy the web stack into A's environment dev, under name: it is
// deploying, its run under way.
func (w *World) DeployStack(t *testing.T, name string) instance.Instance {
	t.Helper()
	inst, err := w.Instances.Deploy(context.Background(), w.UserA, instance.Request{StackID: w.WebStackID(t), EnvironmentID: w.Dev(t).ID, Name: name})
	Must(t, err)
	return inst
}

// PlanStack has A's user plan the web stack in A's environment dev, under name: it is
// pending, its slot's preview queued.
func (w *World) PlanStack(t *testing.T, name string) instance.Instance {
	t.Helper()
	inst, err := w.Instances.Deploy(context.Background(), w.UserA, instance.Request{StackID: w.WebStackID(t), EnvironmentID: w.Dev(t).ID,
		Name: name, PreviewOnly: true})
	Must(t, err)
	if inst.Status != lifecycle.InstancePending || len(inst.Slots) != 1 || inst.Slots[0].Preview == nil {
		t.Fatalf("a plan is %s with slots %+v", inst.Status, inst.Slots)
	}
	return inst
}

// StackInstance is an instance of tenant A being deployed.
func (w *World) StackInstance(t *testing.T) instance.Instance {
	return Fixture(w, "stackInstance", func() instance.Instance { return w.DeployStack(t, "shop") })
}

// Settle ends an instance's runs and leaves it as status, in state (none when empty), as a
// worker leaves it.
func (w *World) Settle(t *testing.T, id uuid.UUID, status, state string) {
	t.Helper()
	ctx := context.Background()
	_, err := w.Pool.Exec(ctx, `UPDATE stack_runs SET status = 'succeeded', finished_at = now() WHERE instance_id = $1 AND status IN ('queued', 'running')`, id)
	Must(t, err)
	_, err = w.Pool.Exec(ctx, `UPDATE stack_instances SET status = $2, current_state = nullif($3, ''), state_entered_at = now() WHERE id = $1`, id, status, state)
	Must(t, err)
	if state != "" {
		_, err = w.Pool.Exec(ctx, `INSERT INTO stack_state_history (instance_id, to_state, trigger) VALUES ($1, $2, 'deployed')`, id, state)
		Must(t, err)
	}
}

// ActiveStack is an instance of tenant A that is deployed and in its state active, no run
// under way.
func (w *World) ActiveStack(t *testing.T) instance.Instance {
	return Fixture(w, "activeStack", func() instance.Instance {
		inst := w.DeployStack(t, "live")
		w.Settle(t, inst.ID, "active", "active")
		return inst
	})
}

// FailedStack is an instance of tenant A whose first deploy failed.
func (w *World) FailedStack(t *testing.T) instance.Instance {
	return Fixture(w, "failedStack", func() instance.Instance {
		inst := w.DeployStack(t, "broken")
		w.Settle(t, inst.ID, "failed", "")
		return inst
	})
}

// WebStackV2 publishes version 2 of the web stack, its slot wired anew, and returns the stack.
func (w *World) WebStackV2(t *testing.T) uuid.UUID {
	return Fixture(w, "webStackV2", func() uuid.UUID {
		id := w.WebStackID(t)
		_, err := w.Pool.Exec(context.Background(), `INSERT INTO stack_versions (stack_id, version, definition, changelog)
			SELECT stack_id, 2, jsonb_set(definition, '{slots,0,inputs,cores}', '{"kind":"literal","value":3}'), 'more cores'
			FROM stack_versions WHERE stack_id = $1 AND version = 1`, id)
		Must(t, err)
		return id
	})
}

// WaitRun polls an instance's runs until the run id has ended and returns it.
func (s *Site) WaitRun(t *testing.T, token, id, run string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		for _, r := range s.Call(t, "GET", "/api/v1/stack-instances/"+id+"/runs", token, nil).JSON(t)["runs"].([]any) {
			if m := r.(map[string]any); m["id"] == run && m["finished_at"] != nil {
				return m
			}
		}
		time.Sleep(150 * time.Millisecond)
	}
	t.Fatalf("run %s of %s did not end in 5 minutes", run, id)
	return nil
}

// History returns an instance's state changes, newest first.
func (s *Site) History(t *testing.T, token, id string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, h := range s.Call(t, "GET", "/api/v1/stack-instances/"+id+"/history", token, nil).JSON(t)["history"].([]any) {
		out = append(out, h.(map[string]any))
	}
	return out
}

// CloudCores reads the cores of each machine in the simulated cloud, by name.
func (s *Site) CloudCores(t *testing.T) map[string]float64 {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(s.Cloud, "machine", "*.json"))
	out := map[string]float64{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		Must(t, err)
		var m struct {
			Name  string  `json:"name"`
			Cores float64 `json:"cores"`
		}
		Must(t, json.Unmarshal(raw, &m))
		out[m.Name] = m.Cores
	}
	return out
}

// WantIn fails the test unless the reply's body holds each of parts.
func WantIn(t testing.TB, r Reply, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(string(r.Body), p) {
			t.Fatalf("the page (%d) lacks %s:\n%.3000s", r.Status, p, r.Body)
		}
	}
}

// PublishedStack records a provider stack with one published version of def, straight in the
// database: these tests are about running stacks, not about making them.
func PublishedStack(t *testing.T, s *Site, name string, def stack.Definition) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	var id uuid.UUID
	Must(t, s.Pool.QueryRow(ctx, `INSERT INTO stacks (provider_id, name, display_name)
		SELECT id, $1, $1 FROM semantic_providers WHERE name = 'simcloud' RETURNING id`, name).Scan(&id))
	ops := def.Operations
	def.Operations = nil
	raw, _ := json.Marshal(def)
	_, err := s.Pool.Exec(ctx, `INSERT INTO stack_versions (stack_id, version, definition, changelog) VALUES ($1, 1, $2, 'first')`, id, raw)
	Must(t, err)
	for i, o := range ops {
		actions, _ := json.Marshal(o.Actions)
		schema := o.InputSchema
		if schema == nil {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		_, err := s.Pool.Exec(ctx, `INSERT INTO stack_day2_operations (stack_id, version, name, display_name, description, input_schema, required_states,
			actions, triggers_transition, position) VALUES ($1, 1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			id, o.Name, o.DisplayName, o.Description, schema, o.RequiredStates, actions, o.TriggersTransition, i)
		Must(t, err)
	}
	return id
}

// WebStack is a network, two machines on it that may deploy at once, and a third machine
// after both, with a lifecycle active ⇄ maintenance → retired.
func WebStack(t *testing.T, s *Site, delayMs int) stack.Definition {
	ids := BuiltinIDs(t, s)
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

// WaitInstance polls a stack instance until check holds and returns it.
func (s *Site) WaitInstance(t testing.TB, token, id string, check func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	var inst map[string]any
	for time.Now().Before(deadline) {
		inst = s.Call(t, "GET", "/api/v1/stack-instances/"+id, token, nil).JSON(t)
		if check(inst) {
			return inst
		}
		time.Sleep(150 * time.Millisecond)
	}
	t.Fatalf("stack instance %s did not get there in 5 minutes: %v", id, inst)
	return nil
}

// Status matches what the API shows (an instance, an operation) whose status is one of want.
func Status(want ...string) func(map[string]any) bool {
	return func(m map[string]any) bool { return slices.Contains(want, m["status"].(string)) }
}

// SlotOperations returns, by slot, the operation each step of the instance's newest run of kind
// ran, as the API shows it.
func (s *Site) SlotOperations(t *testing.T, token, id, kind string) map[string]map[string]any {
	t.Helper()
	runs := s.Call(t, "GET", "/api/v1/stack-instances/"+id+"/runs", token, nil).JSON(t)["runs"].([]any)
	for _, r := range runs {
		run := r.(map[string]any)
		if run["kind"] != kind {
			continue
		}
		out := map[string]map[string]any{}
		for _, st := range run["steps"].([]any) {
			step := st.(map[string]any)
			if op, ok := step["operation_id"].(string); ok {
				out[step["slot"].(string)] = s.Call(t, "GET", "/api/v1/operations/"+op, token, nil).JSON(t)
			}
		}
		return out
	}
	t.Fatalf("no %s run of %s", kind, id)
	return nil
}

// MachineCores reads the cores of the simulated machine named name.
func (s *Site) MachineCores(t *testing.T, name string) float64 {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(s.Cloud, "machine", "*.json"))
	for _, f := range files {
		raw, err := os.ReadFile(f)
		Must(t, err)
		var m map[string]any
		Must(t, json.Unmarshal(raw, &m))
		if m["name"] == name {
			return m["cores"].(float64)
		}
	}
	t.Fatalf("no machine named %s in the cloud", name)
	return 0
}

// UpgradeAndRollBack upgrades an instance to version and waits for the rollback its failure
// starts to end; the instance must be active at version 1 again.
func (s *Site) UpgradeAndRollBack(t *testing.T, token, id string, version int, failed string) map[string]any {
	t.Helper()
	WantStatus(t, s.Call(t, "POST", "/api/v1/stack-instances/"+id+"/upgrade", token, map[string]any{"version": version}), http.StatusAccepted)
	inst := s.WaitInstance(t, token, id, func(m map[string]any) bool {
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
