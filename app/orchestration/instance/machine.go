package instance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"nimbus/app/domain/component"
	"nimbus/app/domain/governance"
	"nimbus/app/domain/stack"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/graph"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/problem"
	"nimbus/app/orchestration/deploy"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// RunTransition fires a trigger of the instance's state machine: it runs the transition's
// actions, in order, and then moves the state.
const RunTransition RunKind = "transition"

// Fire asks for trigger to be fired on an instance. The signal is queued behind the run under
// way, if any, and checked against the state when its turn comes: a trigger the state does not
// take then ends its run refused. With no run under way, one the state plainly does not take is
// refused at once. Those who may run day-2 operations may move the machine.
func (s *Service) Fire(ctx context.Context, actor access.Principal, id uuid.UUID, trigger string) (Run, error) {
	trigger = strings.TrimSpace(trigger)
	var runID uuid.UUID
	err := db.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Queries(tx)
		inst, err := s.lockFor(ctx, q, actor, id, access.StackInstanceDay2)
		if err != nil {
			return err
		}
		if trigger == "" {
			return problem.Invalid("trigger", "required", "name the trigger to fire")
		}
		if idle, err := idle(ctx, q, inst.ID); err != nil {
			return err
		} else if idle {
			def, err := stack.LoadVersion(ctx, q, inst.StackID, int(inst.Version))
			if err != nil {
				return err
			}
			if _, err := fires(inst, def, trigger); err != nil {
				return problem.Invalid("trigger", "state", "%v", err)
			}
		}
		run, err := s.run.queue(ctx, tx, inst, dbgen.CreateStackRunParams{Kind: string(RunTransition), Trigger: trigger,
			Source: source(ctx), RequestedBy: uuid.NullUUID{UUID: actor.UserID, Valid: actor.UserID != uuid.Nil}})
		if err != nil {
			return err
		}
		runID = run.ID
		return audit.Record(ctx, q, actor, audit.Event{Tenant: inst.TenantID, Action: "stack_instance.fire", TargetType: "stack_instance",
			TargetID: inst.ID.String(), Diff: map[string]any{"name": inst.Name, "trigger": trigger, "run": run.ID}})
	})
	if err != nil {
		return Run{}, fmt.Errorf("fire %s on stack instance: %w", trigger, err)
	}
	return s.runByID(ctx, runID)
}

// idle reports whether an instance has no run under way: what it asks for starts at once.
func idle(ctx context.Context, q *dbgen.Queries, id uuid.UUID) (bool, error) {
	_, err := q.RunningStackRun(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return true, nil
	}
	return false, err
}

// runByID reads a run as people and the API see it.
func (s *Service) runByID(ctx context.Context, id uuid.UUID) (Run, error) {
	q := db.Queries(s.pool)
	r, err := q.GetStackRun(ctx, id)
	if err != nil {
		return Run{}, fmt.Errorf("read run %s: %w", id, err)
	}
	return runView(ctx, q, dbgen.StackRunsRow(r))
}

// settled refuses, in words, an instance that cannot move or run day-2 operations now: one
// that is not whole (active, or degraded after a failed action) or has no state yet.
func settled(inst dbgen.StackInstance) error {
	if st := lifecycle.InstanceStatus(inst.Status); st != lifecycle.InstanceActive && st != lifecycle.InstanceDegraded {
		return refuse("%s is %s: only an active or degraded instance moves between states and runs day-2 operations", inst.Name, st)
	}
	if inst.CurrentState == nil {
		return refuse("%s has no state yet", inst.Name)
	}
	return nil
}

// fires returns the transition trigger takes the instance along, or refuses it in words,
// naming the triggers its state takes.
func fires(inst dbgen.StackInstance, def stack.Definition, trigger string) (stack.Transition, error) {
	if err := settled(inst); err != nil {
		return stack.Transition{}, err
	}
	state := *inst.CurrentState
	if t, ok := def.Machine.Fire(state, trigger); ok {
		return t, nil
	}
	takes := def.Machine.Triggers(state)
	if len(takes) == 0 {
		return stack.Transition{}, refuse("%s is not a trigger of state %s; it takes none", trigger, state)
	}
	return stack.Transition{}, refuse("%s is not a trigger of state %s; it takes %s", trigger, state, strings.Join(takes, ", "))
}

// transitionKind runs a transition's actions, each after the one before, and moves the state
// when they all succeeded. When one fails the state stays and the instance is degraded.
var transitionKind = kind{
	begin: func(ctx context.Context, r *runCtx) ([]step, error) {
		if err := stillThere(r); err != nil {
			return nil, err
		}
		t, err := fires(r.inst, r.def, r.run.Trigger)
		if err != nil {
			return nil, err
		}
		return actionSteps(t.Action), nil
	},
	start: func(ctx context.Context, r *runCtx, s dbgen.StackRunStepsRow) (uuid.UUID, map[string]any, error) {
		t, ok := r.def.Machine.Fire(deref(r.inst.CurrentState), r.run.Trigger)
		if !ok {
			return uuid.Nil, nil, fmt.Errorf("state %s has no trigger %s", deref(r.inst.CurrentState), r.run.Trigger)
		}
		return startAction(ctx, r, t.Action, nil, s)
	},
	end: func(ctx context.Context, r *runCtx, outcome graph.Step, refusal error) error {
		from := deref(r.inst.CurrentState)
		if !outcome.Done {
			if len(r.operations()) == 0 {
				return nil // refused before anything ran: the run says why, the instance is as it was
			}
			return move(ctx, r.q, r.inst, lifecycle.InstanceDegraded, fmt.Sprintf("The transition %s stopped: %s. The state stays %s.",
				r.run.Trigger, failure(r, outcome, refusal), from))
		}
		t, ok := r.def.Machine.Fire(from, r.run.Trigger)
		if !ok {
			return fmt.Errorf("state %s has no trigger %s", from, r.run.Trigger)
		}
		if err := enter(ctx, r.q, r.inst, t.To, cause{trigger: t.Trigger, source: r.run.Source, actor: r.run.RequestedBy,
			run: r.run.ID, operations: r.operations()}); err != nil {
			return err
		}
		if err := r.heal(ctx); err != nil {
			return err
		}
		if err := r.scheduleTimeout(ctx, t); err != nil {
			return err
		}
		return audit.Record(ctx, r.q, r.actor, audit.Event{Tenant: r.inst.TenantID, Action: "stack_instance.transition",
			TargetType: "stack_instance", TargetID: r.inst.ID.String(), Diff: map[string]any{"name": r.inst.Name, "from": from,
				"to": t.To, "trigger": t.Trigger, "source": r.run.Source, "run": r.run.ID}})
	},
}

// heal makes a degraded instance active again once an action run succeeded with every slot
// deployed: what failed before has been put right.
func (r *runCtx) heal(ctx context.Context) error {
	if lifecycle.InstanceStatus(r.inst.Status) != lifecycle.InstanceDegraded || len(r.deployedSlots()) != len(r.def.Slots) {
		return nil
	}
	return move(ctx, r.q, r.inst, lifecycle.InstanceActive, "")
}

// scheduleTimeout queues, with the state's move, the firing of a transition's on_timeout once
// the instance has stayed in its state for the transition's timeout.
func (r *runCtx) scheduleTimeout(ctx context.Context, t stack.Transition) error {
	if t.Timeout == "" || t.OnTimeout == "" {
		return nil
	}
	after, err := time.ParseDuration(t.Timeout)
	if err != nil {
		return fmt.Errorf("timeout of %s: %w", t.Trigger, err)
	}
	entered, err := r.q.StackStateEntered(ctx, r.inst.ID)
	if err != nil {
		return err
	}
	_, err = r.deps.jobs.InsertTx(ctx, r.tx, TimeoutArgs{InstanceID: r.inst.ID, State: t.To, EnteredAt: *entered.StateEnteredAt,
		Trigger: t.OnTimeout}, &river.InsertOpts{ScheduledAt: entered.StateEnteredAt.Add(after)})
	return err
}

// actionSteps are the steps of an action list: each action one step on its slot, after the
// one before.
func actionSteps(actions []stack.Action) []step {
	out := make([]step, len(actions))
	for i, a := range actions {
		out[i] = step{name: fmt.Sprintf("%d-%s", i+1, a.Slot), slot: a.Slot, action: string(a.Do)}
		if i > 0 {
			out[i].after = []string{out[i-1].name}
		}
	}
	return out
}

// startAction starts the action of a step, an ordinary operation on its slot's deployment: an
// update with the inputs its expressions give now, over the parameters, the operation's inputs
// (declared by inputs; nil for a transition) and the slots' outputs; a refresh; an upgrade to
// the latest version of the slot's component (nothing to do when it has it); a redeploy, an
// update changing nothing.
func startAction(ctx context.Context, r *runCtx, actions []stack.Action, inputs *component.Schema, s dbgen.StackRunStepsRow) (uuid.UUID, map[string]any, error) {
	if int(s.Position) >= len(actions) {
		return uuid.Nil, nil, fmt.Errorf("run %s has no action %d", r.run.ID, s.Position)
	}
	a := actions[s.Position]
	d, ok := r.slots[a.Slot]
	if !ok || d.Status == string(deploy.Destroyed) {
		return uuid.Nil, nil, problem.Invalid("slots."+a.Slot, "deployed", "slot %s has no deployment to %s", a.Slot, a.Do)
	}
	detail := map[string]any{"deployment": d.ID}
	switch a.Do {
	case stack.Update:
		params, err := r.actionInputs(ctx, a, inputs)
		if err != nil {
			return uuid.Nil, nil, err
		}
		if err := r.governed(ctx, a.Slot, d.ComponentID, d.Version, params); err != nil {
			return uuid.Nil, nil, err
		}
		detail["inputs"] = slices.Sorted(maps.Keys(params))
		op, err := r.deps.deploys.RequestTx(ctx, r.tx, r.actor, d.ID, deploy.KindUpdate, deploy.Change{Parameters: params})
		return op, detail, err
	case stack.Refresh:
		op, err := r.deps.deploys.RequestTx(ctx, r.tx, r.actor, d.ID, deploy.KindRefresh, deploy.Change{})
		return op, detail, err
	case stack.Upgrade:
		comp, err := r.q.GetComponent(ctx, d.ComponentID)
		if err != nil {
			return uuid.Nil, nil, err
		}
		if comp.LatestVersion <= d.Version {
			detail["version"] = d.Version
			return uuid.Nil, detail, nil
		}
		detail["version"] = comp.LatestVersion
		op, err := r.deps.deploys.RequestTx(ctx, r.tx, r.actor, d.ID, deploy.KindUpgrade, deploy.Change{Version: int(comp.LatestVersion)})
		return op, detail, err
	case stack.Redeploy:
		op, err := r.deps.deploys.RequestTx(ctx, r.tx, r.actor, d.ID, deploy.KindUpdate, deploy.Change{})
		return op, detail, err
	}
	return uuid.Nil, nil, problem.Invalid("slots."+a.Slot, "action", "%q is not an action: update, refresh, upgrade or redeploy", a.Do)
}

// governed holds what a tenant factory's slot is given when it first deploys or is updated to
// the governance of the tenant whose namespace the instance makes: neither an input wired to
// another slot's output, which provisioning cannot check before the run, nor a day-2 operation
// such as change_tier gives the tenant anything its governance would refuse it. Every plain
// input is checked, those worked out from others too; secret ones are not, so that no refusal
// quotes one. Refusals name the slot's input and the namespace.
func (r *runCtx) governed(ctx context.Context, slot string, componentID uuid.UUID, version int32, params map[string]any) error {
	n, err := r.q.InstanceTenantNamespace(ctx, uuid.NullUUID{UUID: r.inst.ID, Valid: true})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	ver, err := r.q.GetComponentVersion(ctx, dbgen.GetComponentVersionParams{ComponentID: componentID, Version: version})
	if err != nil {
		return err
	}
	schema := component.ParseSchema("input_schema", ver.InputSchema, &problem.ValidationError{})
	plain := map[string]any{}
	for k, v := range params {
		if !schema.Secret(k) {
			plain[k] = v
		}
	}
	err = governance.Check(ctx, r.q, n.TenantID, componentID, plain)
	var refused *problem.ValidationError
	var denied *problem.Denied
	switch {
	case errors.As(err, &refused):
		// Whose rules refused it, said after each rule's own words.
		for i, f := range refused.Fields {
			refused.Fields[i].Message = fmt.Sprintf("%s (the tenant of namespace %s)", f.Message, n.Namespace)
		}
	case errors.As(err, &denied):
		return problem.Invalid("slots."+slot, "governance", "%s (the tenant of namespace %s)", denied.Message, n.Namespace)
	}
	return err
}

// actionInputs works out an update's inputs from its expressions, as things are now.
func (r *runCtx) actionInputs(ctx context.Context, a stack.Action, inputs *component.Schema) (map[string]any, error) {
	given := map[string]any{}
	if err := json.Unmarshal(r.run.Inputs, &given); err != nil {
		return nil, err
	}
	secret, err := r.deps.open(r.run.ID, r.run.SecretKeyID, r.run.SecretInputs)
	if err != nil {
		return nil, fmt.Errorf("secret inputs of run %s: %w", r.run.ID, err)
	}
	maps.Copy(given, secret)
	values, err := r.values(given)
	if err != nil {
		return nil, err
	}
	schemas, err := stack.LoadSchemas(ctx, r.q, r.def)
	if err != nil {
		return nil, err
	}
	scope := schemas.ActionScope(inputs)
	out := map[string]any{}
	for _, name := range slices.Sorted(maps.Keys(a.Inputs)) {
		var want *component.Property
		if in := schemas.Inputs[a.Slot]; in != nil {
			want = in.Properties[name]
		}
		field := "slots." + a.Slot + ".inputs." + name
		e, err := stack.Compile(a.Inputs[name], scope, want)
		if err != nil {
			return nil, problem.Invalid(field, "expression", "%v", err)
		}
		v, err := e.Eval(ctx, values)
		if err != nil && readsSecret(a.Inputs[name], schemas.Params, inputs) {
			// The evaluator's words may quote the values it read.
			return nil, problem.Invalid(field, "expression", "it could not be worked out from the secret values it reads")
		}
		if err != nil {
			return nil, problem.Invalid(field, "expression", "%v", err)
		}
		out[name] = v
	}
	// The deployment checks inputs as JSON gives them: numbers as float64, whatever CEL made.
	raw, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	out = map[string]any{}
	return out, json.Unmarshal(raw, &out)
}

// readsSecret reports whether an expression reads a secret parameter or a secret input of the
// operation (inputs; nil for a transition).
func readsSecret(expr string, params, inputs *component.Schema) bool {
	return slices.ContainsFunc(stack.ParamsIn(expr), func(p string) bool { return params != nil && params.Secret(p) }) ||
		slices.ContainsFunc(stack.InputsIn(expr), func(in string) bool { return inputs != nil && inputs.Secret(in) })
}

// Change is one move of an instance's state: from where to where, fired by which trigger from
// which source (person, api, timeout, day2, deployed), by whom, in which run, with the
// operations the run ran.
type Change struct {
	From       string      `json:"from"` // empty for the first state, entered when deployed
	To         string      `json:"to"`
	Trigger    string      `json:"trigger"`
	Source     string      `json:"source"`
	Who        string      `json:"who"` // the email of who asked; "system" for a timeout
	At         time.Time   `json:"at"`
	RunID      *uuid.UUID  `json:"run_id"`
	Operations []uuid.UUID `json:"operations"`
}

// History returns the moves of an instance's state, newest first.
func (s *Service) History(ctx context.Context, actor access.Principal, id uuid.UUID) ([]Change, error) {
	if _, err := s.Get(ctx, actor, id); err != nil {
		return nil, err
	}
	rows, err := db.Queries(s.pool).StackStateHistory(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("history of stack instance %s: %w", id, err)
	}
	out := make([]Change, len(rows))
	for i, h := range rows {
		c := Change{From: deref(h.FromState), To: h.ToState, Trigger: h.Trigger, Source: h.Source, Who: deref(h.ActorEmail),
			At: h.CreatedAt, Operations: h.Operations}
		if c.Who == "" {
			c.Who = "system"
		}
		if h.RunID.Valid {
			c.RunID = &h.RunID.UUID
		}
		if c.Operations == nil {
			c.Operations = []uuid.UUID{}
		}
		out[i] = c
	}
	return out, nil
}

// triggerOffers are the triggers the instance's state takes, each offered unless the instance
// cannot move now.
func triggerOffers(inst dbgen.StackInstance, def stack.Definition) []Offer {
	var out []Offer
	not := settled(inst)
	for _, t := range def.Machine.Transitions {
		if inst.CurrentState == nil || t.From != *inst.CurrentState {
			continue
		}
		o := Offer{Kind: "transition", Name: t.Trigger, To: t.To, Offered: not == nil}
		if not != nil {
			o.Reason = not.Error()
		}
		out = append(out, o)
	}
	return out
}
