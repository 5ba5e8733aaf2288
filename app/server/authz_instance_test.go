package server_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/access"
	"nimbus/app/instance"
	"nimbus/app/lifecycle"
	"nimbus/app/problem"
	"nimbus/app/stack"
)

// instances is the world's stack instance service; no worker takes its runs.
func (w *world) instances(t *testing.T) *instance.Service {
	return fixture(w, "instances", func() *instance.Service {
		return instance.NewService(w.pool, w.deploys, w.keys, insertOnly(t, w.pool))
	})
}

// webStackID is a provider stack of one slot, the shared machine, with a lifecycle active ⇄
// maintenance and a day-2 operation resize in active; published as version 1.
func (w *world) webStackID(t *testing.T) uuid.UUID {
	return fixture(w, "webStack", func() uuid.UUID {
		ctx := context.Background()
		def := stack.Definition{
			Parameters: json.RawMessage(`{"type":"object","properties":{}}`),
			Slots: []stack.Slot{{Name: "web", Component: w.shared.ID, Version: 1, Inputs: map[string]stack.Wiring{
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
		must(t, w.pool.QueryRow(ctx, `INSERT INTO stacks (provider_id, name) SELECT id, 'web' FROM semantic_providers WHERE name = 'simcloud' RETURNING id`).Scan(&id))
		_, err := w.pool.Exec(ctx, `INSERT INTO stack_versions (stack_id, version, definition, changelog) VALUES ($1, 1, $2, 'first')`, id, raw)
		must(t, err)
		_, err = w.pool.Exec(ctx, `INSERT INTO stack_day2_operations (stack_id, version, name, input_schema, required_states, actions)
			VALUES ($1, 1, 'resize', '{"type":"object","properties":{"cores":{"type":"integer"}}}', '{active}',
			'[{"slot":"web","do":"update","inputs":{"cores":"inputs.cores"}}]')`, id)
		must(t, err)
		return id
	})
}

// deployStack has A's user deploy the web stack into A's environment dev, under name: it is
// deploying, its run under way.
func (w *world) deployStack(t *testing.T, name string) instance.Instance {
	t.Helper()
	inst, err := w.instances(t).Deploy(context.Background(), w.userA, instance.Request{StackID: w.webStackID(t), EnvironmentID: w.dev(t).ID, Name: name})
	must(t, err)
	return inst
}

// planStack has A's user plan the web stack in A's environment dev, under name: it is
// pending, its slot's preview queued.
func (w *world) planStack(t *testing.T, name string) instance.Instance {
	t.Helper()
	inst, err := w.instances(t).Deploy(context.Background(), w.userA, instance.Request{StackID: w.webStackID(t), EnvironmentID: w.dev(t).ID,
		Name: name, PreviewOnly: true})
	must(t, err)
	if inst.Status != lifecycle.InstancePending || len(inst.Slots) != 1 || inst.Slots[0].Preview == nil {
		t.Fatalf("a plan is %s with slots %+v", inst.Status, inst.Slots)
	}
	return inst
}

// stackInstance is an instance of tenant A being deployed.
func (w *world) stackInstance(t *testing.T) instance.Instance {
	return fixture(w, "stackInstance", func() instance.Instance { return w.deployStack(t, "shop") })
}

// settle ends an instance's runs and leaves it as status, in state (none when empty), as a
// worker leaves it.
func (w *world) settle(t *testing.T, id uuid.UUID, status, state string) {
	t.Helper()
	ctx := context.Background()
	_, err := w.pool.Exec(ctx, `UPDATE stack_runs SET status = 'succeeded', finished_at = now() WHERE instance_id = $1 AND status IN ('queued', 'running')`, id)
	must(t, err)
	_, err = w.pool.Exec(ctx, `UPDATE stack_instances SET status = $2, current_state = nullif($3, ''), state_entered_at = now() WHERE id = $1`, id, status, state)
	must(t, err)
	if state != "" {
		_, err = w.pool.Exec(ctx, `INSERT INTO stack_state_history (instance_id, to_state, trigger) VALUES ($1, $2, 'deployed')`, id, state)
		must(t, err)
	}
}

// activeStack is an instance of tenant A that is deployed and in its state active, no run
// under way.
func (w *world) activeStack(t *testing.T) instance.Instance {
	return fixture(w, "activeStack", func() instance.Instance {
		inst := w.deployStack(t, "live")
		w.settle(t, inst.ID, "active", "active")
		return inst
	})
}

// failedStack is an instance of tenant A whose first deploy failed.
func (w *world) failedStack(t *testing.T) instance.Instance {
	return fixture(w, "failedStack", func() instance.Instance {
		inst := w.deployStack(t, "broken")
		w.settle(t, inst.ID, "failed", "")
		return inst
	})
}

// instanceName is a stack instance's name for whoever deploys it, so that each served call
// makes its own.
func instanceName(p access.Principal) string { return strings.Split(p.Email, "@")[0] }

// webStackV2 publishes version 2 of the web stack, its slot wired anew, and returns the stack.
func (w *world) webStackV2(t *testing.T) uuid.UUID {
	return fixture(w, "webStackV2", func() uuid.UUID {
		id := w.webStackID(t)
		_, err := w.pool.Exec(context.Background(), `INSERT INTO stack_versions (stack_id, version, definition, changelog)
			SELECT stack_id, 2, jsonb_set(definition, '{slots,0,inputs,cores}', '{"kind":"literal","value":3}'), 'more cores'
			FROM stack_versions WHERE stack_id = $1 AND version = 1`, id)
		must(t, err)
		return id
	})
}

var instanceCases = map[string]authzCase{
	"instance.Service.Upgrade": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {readerA, problem.ErrForbidden}, {userA, problem.ErrForbidden}},
		served:  []actor{adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			active := w.activeStack(t)
			w.webStackV2(t)
			inst, err := w.instances(t).Upgrade(context.Background(), p, active.ID, 0)
			if err == nil && inst.Status != lifecycle.InstanceUpgrading {
				t.Errorf("an instance upgrading is %s", inst.Status)
			}
			return err
		},
		then: func(t *testing.T, w *world) {
			later := w.deployStack(t, "later")
			w.settle(t, later.ID, "active", "active")
			_, err := w.instances(t).Upgrade(context.Background(), w.adminA, later.ID, 0)
			wantField(t, err, "version") // deployed at the latest version already
		},
	},
	"instance.Service.UpgradePlan": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {stranger, problem.ErrNotFound}},
		served:  []actor{readerA, adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			deploying := w.stackInstance(t)
			w.webStackV2(t)
			plan, err := w.instances(t).UpgradePlan(context.Background(), p, deploying.ID, 0)
			if err == nil && (plan.To != 2 || len(plan.Slots) != 1 || plan.Slots[0].Change != instance.Updated) {
				t.Errorf("upgrade plan %+v", plan)
			}
			return err
		},
	},
	"instance.Service.Deploy": {
		refused: []refusal{{adminB, invalid("environment_id")}, {readerA, problem.ErrForbidden}},
		served:  []actor{userA, adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			inst, err := w.instances(t).Deploy(context.Background(), p, instance.Request{StackID: w.webStackID(t), EnvironmentID: w.dev(t).ID,
				Name: instanceName(p)})
			if err == nil && (inst.Status != lifecycle.InstanceDeploying || len(inst.Slots) != 1) {
				t.Errorf("a new instance is %s with slots %v", inst.Status, inst.Slots)
			}
			return err
		},
		then: func(t *testing.T, w *world) {
			_, err := w.instances(t).Deploy(context.Background(), w.userA, instance.Request{StackID: w.webStackID(t), EnvironmentID: w.dev(t).ID, Name: "user-a"})
			wantField(t, err, "name") // the name is taken
		},
	},
	"instance.Service.Destroy": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {readerA, problem.ErrForbidden}, {userA, problem.ErrForbidden}},
		served:  []actor{adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			_, err := w.instances(t).Destroy(context.Background(), p, w.activeStack(t).ID)
			return err
		},
		then: func(t *testing.T, w *world) {
			inst, err := w.instances(t).Get(context.Background(), w.adminA, w.activeStack(t).ID)
			must(t, err)
			if inst.Status != lifecycle.InstanceDestroying {
				t.Fatalf("a destroyed instance is %s", inst.Status)
			}
		},
	},
	"instance.Service.Retry": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {readerA, problem.ErrForbidden}},
		served:  []actor{userA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			inst, err := w.instances(t).Retry(context.Background(), p, w.failedStack(t).ID)
			if err == nil && inst.Status != lifecycle.InstanceDeploying {
				t.Errorf("a retried instance is %s", inst.Status)
			}
			return err
		},
		then: func(t *testing.T, w *world) {
			_, err := w.instances(t).Retry(context.Background(), w.userA, w.stackInstance(t).ID)
			wantField(t, err, "instance") // not failed
		},
	},
	"instance.Service.Start": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {readerA, problem.ErrForbidden}},
		served:  []actor{userA, adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			inst, err := w.instances(t).Start(context.Background(), p, w.planStack(t, instanceName(p)).ID, false)
			if err == nil && inst.Status != lifecycle.InstanceDeploying {
				t.Errorf("a plan deployed is %s", inst.Status)
			}
			return err
		},
		then: func(t *testing.T, w *world) {
			_, err := w.instances(t).Start(context.Background(), w.userA, w.stackInstance(t).ID, false)
			wantField(t, err, "instance") // not pending
		},
	},
	"instance.Service.Discard": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {readerA, problem.ErrForbidden}},
		served:  []actor{userA, adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			// No worker took the plan's preview: it is withdrawn, and the plan ends at once.
			inst, err := w.instances(t).Discard(context.Background(), p, w.planStack(t, instanceName(p)).ID)
			if err == nil && (inst.Status != lifecycle.InstanceDestroyed || inst.Slots[0].Status != "destroyed" || inst.Slots[0].Preview != nil) {
				t.Errorf("a plan discarded is %s with slots %+v", inst.Status, inst.Slots)
			}
			return err
		},
		then: func(t *testing.T, w *world) {
			_, err := w.instances(t).Discard(context.Background(), w.userA, w.activeStack(t).ID)
			wantField(t, err, "instance") // not pending
		},
	},
	"instance.Service.Get": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {stranger, problem.ErrNotFound}},
		served:  []actor{readerA, providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			_, err := w.instances(t).Get(context.Background(), p, w.stackInstance(t).ID)
			return err
		},
	},
	"instance.Service.List": {
		refused: []refusal{{adminB, errHidden}, {stranger, errHidden}},
		served:  []actor{readerA, providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			want := w.stackInstance(t).ID
			list, err := w.instances(t).List(context.Background(), p, instance.Filter{})
			return shown(list, err, func(i instance.Instance) bool { return i.ID == want })
		},
	},
	"instance.Service.Runs": {
		refused: []refusal{{adminB, problem.ErrNotFound}},
		served:  []actor{readerA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			runs, err := w.instances(t).Runs(context.Background(), p, w.stackInstance(t).ID)
			return shown(runs, err, func(r instance.Run) bool { return r.Kind == "deploy" })
		},
	},
	"instance.Service.Fire": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {readerA, problem.ErrForbidden}},
		served:  []actor{userA, adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			run, err := w.instances(t).Fire(context.Background(), p, w.activeStack(t).ID, "maintain")
			if err == nil && (run.Kind != "transition" || run.Trigger != "maintain" || run.RequestedBy != p.Email) {
				t.Errorf("fired %+v", run)
			}
			return err
		},
		then: func(t *testing.T, w *world) {
			// With no run under way, a trigger the state does not take is refused at once.
			inst := w.deployStack(t, "idle")
			w.settle(t, inst.ID, "active", "active")
			_, err := w.instances(t).Fire(context.Background(), w.userA, inst.ID, "resume")
			wantField(t, err, "trigger")
		},
	},
	"instance.Service.RunOperation": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {readerA, problem.ErrForbidden}},
		served:  []actor{userA, adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			run, err := w.instances(t).RunOperation(context.Background(), p, w.activeStack(t).ID, "resize", map[string]any{"cores": 3.0})
			if err == nil && (run.Kind != "day2" || run.Operation != "resize") {
				t.Errorf("ran %+v", run)
			}
			return err
		},
		then: func(t *testing.T, w *world) {
			_, err := w.instances(t).RunOperation(context.Background(), w.userA, w.activeStack(t).ID, "resize", map[string]any{"cores": "many"})
			wantField(t, err, "inputs.cores")
			_, err = w.instances(t).RunOperation(context.Background(), w.userA, w.activeStack(t).ID, "shrink", nil)
			wantField(t, err, "operation")
		},
	},
	"instance.Service.Operations": {
		refused: []refusal{{adminB, problem.ErrNotFound}},
		served:  []actor{readerA, userA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			offers, err := w.instances(t).Operations(context.Background(), p, w.activeStack(t).ID)
			may := p.Can(access.StackInstanceDay2, w.a.ID)
			for _, o := range offers {
				if o.Offered != may {
					t.Errorf("%s is offered %v to %s", o.Name, o.Offered, p.Email)
				}
			}
			return shown(offers, err, func(o instance.Offer) bool { return o.Kind == "operation" && o.Name == "resize" })
		},
	},
	"instance.Service.History": {
		refused: []refusal{{adminB, problem.ErrNotFound}},
		served:  []actor{readerA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			h, err := w.instances(t).History(context.Background(), p, w.activeStack(t).ID)
			return shown(h, err, func(c instance.Change) bool { return c.To == "active" && c.Trigger == "deployed" })
		},
	},
}
