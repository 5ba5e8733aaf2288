package instance

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"github.com/google/uuid"

	"nimbus/app/domain/stack"
	"nimbus/app/kernel/graph"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/problem"
	"nimbus/app/orchestration/deploy"
	"nimbus/db/dbgen"
)

// deployKind deploys the slots not deployed yet, each once the slots it reads from are: a
// first deploy deploys them all, a retry what is missing.
var deployKind = kind{
	begin: func(ctx context.Context, r *runCtx) ([]step, error) {
		switch lifecycle.InstanceStatus(r.inst.Status) {
		case lifecycle.InstancePending, lifecycle.InstanceDeploying, lifecycle.InstanceFailed:
		default:
			return nil, refuse("%s is %s: only a new or failed instance is deployed", r.inst.Name, r.inst.Status)
		}
		var out []step
		for _, s := range r.def.Slots {
			if d, ok := r.slots[s.Name]; ok && d.Status == string(deploy.Deployed) {
				continue
			}
			out = append(out, step{name: s.Name, slot: s.Name, action: "deploy", after: s.Upstream()})
		}
		if lifecycle.InstanceStatus(r.inst.Status) != lifecycle.InstanceDeploying {
			return out, move(ctx, r.q, r.inst, lifecycle.InstanceDeploying, "")
		}
		return out, nil
	},
	start: startDeploy,
	end: func(ctx context.Context, r *runCtx, outcome graph.Step, refusal error) error {
		if outcome.Done {
			if err := deployed(ctx, r.q, r.inst); err != nil {
				return err
			}
			if r.inst.CurrentState != nil {
				return nil
			}
			return enter(ctx, r.q, r.inst, r.def.Machine.Initial(), cause{trigger: "deployed", source: r.run.Source,
				actor: r.run.RequestedBy, run: r.run.ID, operations: r.operations()})
		}
		reason := failure(r, outcome, refusal)
		if r.inst.DeployedAt != nil || r.run.KeepOnFailure {
			kept := r.deployedSlots()
			msg := "Deploying stopped: " + reason + "."
			if len(kept) > 0 {
				msg += " Kept: " + strings.Join(kept, ", ") + "; a retry deploys what is missing."
			}
			return move(ctx, r.q, r.inst, lifecycle.InstanceFailed, msg)
		}
		// A first deploy that failed takes down what it made, in reverse order.
		if err := move(ctx, r.q, r.inst, lifecycle.InstanceFailed, "Deploying failed: "+reason+". Removing what was made, in reverse order."); err != nil {
			return err
		}
		why, _ := json.Marshal(map[string]string{"reason": "Deploying failed: " + reason + "."})
		_, err := record(ctx, r.q, dbgen.CreateStackRunParams{InstanceID: r.inst.ID, Kind: string(RunCompensate),
			Inputs: why, Source: "system", RequestedBy: r.run.RequestedBy})
		return err
	},
}

// startDeploy deploys one slot: its inputs worked out from its wiring, over the parameters and
// the outputs of the slots deployed, into a deployment made for it (or the one a failed try
// left, or a pending instance's preview planned).
func startDeploy(ctx context.Context, r *runCtx, s dbgen.StackRunStepsRow) (uuid.UUID, map[string]any, error) {
	if d, ok := r.slots[s.Slot]; ok && d.Status != string(deploy.Destroyed) {
		op, err := startPlanned(ctx, r, d)
		return op, map[string]any{"deployment": d.ID}, err
	}
	slot, ok := r.def.Slot(s.Slot)
	if !ok {
		return uuid.Nil, nil, fmt.Errorf("version %d has no slot %s", r.inst.Version, s.Slot)
	}
	id, err := r.plan(ctx, slot)
	if err != nil {
		return uuid.Nil, nil, err
	}
	op, err := r.deps.deploys.StartTx(ctx, r.tx, r.actor, id, deploy.KindDeploy)
	return op, map[string]any{"deployment": id}, err
}

// plan records the deployment of a slot, its inputs worked out from its wiring over the
// parameters and the outputs of the slots deployed, without deploying it. A tenant factory's
// slot is held to the tenant's governance first.
func (r *runCtx) plan(ctx context.Context, slot stack.Slot) (uuid.UUID, error) {
	inputs, err := r.wire(ctx, slot)
	if err != nil {
		return uuid.Nil, err
	}
	return r.planWired(ctx, slot, inputs)
}

// planWired is plan with the slot's inputs worked out already.
func (r *runCtx) planWired(ctx context.Context, slot stack.Slot, inputs map[string]any) (uuid.UUID, error) {
	if err := r.governed(ctx, slot.Name, slot.Component, int32(slot.Version), inputs); err != nil {
		return uuid.Nil, err
	}
	return r.deps.deploys.Plan(ctx, r.tx, r.actor, deploy.Request{ComponentID: slot.Component, Version: slot.Version,
		EnvironmentID: r.inst.EnvironmentID, Name: DeploymentName(r.inst.Name, slot.Name), Parameters: inputs},
		deploy.Owner{StackInstance: r.inst.ID, Slot: slot.Name})
}

// DeploymentName is the name of the deployment holding an instance's slot.
func DeploymentName(instance, slot string) string {
	return instance + "-" + strings.ReplaceAll(slot, "_", "-")
}

// wire works out a slot's inputs from its wiring in the run's version, over the parameters
// and the outputs of the slots deployed now.
func (r *runCtx) wire(ctx context.Context, slot stack.Slot) (map[string]any, error) {
	schemas, err := stack.LoadSchemas(ctx, r.q, r.def)
	if err != nil {
		return nil, err
	}
	values, err := r.values(nil)
	if err != nil {
		return nil, err
	}
	inputs, err := stack.Wire(ctx, schemas, slot, values)
	if err != nil {
		return nil, problem.Invalid("slots."+slot.Name, "wiring", "%v", err)
	}
	return inputs, nil
}

// values are what expressions read: the instance's parameters (secret ones opened), an
// operation's inputs, and the outputs of every slot deployed.
func (r *runCtx) values(inputs map[string]any) (map[string]any, error) {
	params, err := r.params()
	if err != nil {
		return nil, err
	}
	outputs := map[string]map[string]any{}
	for slot, d := range r.slots {
		if d.Status != string(deploy.Deployed) {
			continue
		}
		o := map[string]any{}
		if err := json.Unmarshal(d.Outputs, &o); err != nil {
			return nil, err
		}
		outputs[slot] = o
	}
	return stack.Values(params, inputs, outputs), nil
}

// params are the instance's parameters, secret ones opened.
func (r *runCtx) params() (map[string]any, error) {
	params := map[string]any{}
	if err := json.Unmarshal(r.inst.Parameters, &params); err != nil {
		return nil, err
	}
	secret, err := r.deps.openParameters(r.inst)
	if err != nil {
		return nil, err
	}
	maps.Copy(params, secret)
	return params, nil
}

// deployedSlots names the slots whose deployment is deployed.
func (r *runCtx) deployedSlots() []string {
	var out []string
	for _, s := range r.def.Slots {
		if d, ok := r.slots[s.Name]; ok && d.Status == string(deploy.Deployed) {
			out = append(out, s.Name)
		}
	}
	return out
}

// takeDown are the steps destroying every slot that has a deployment still there, each after
// the slots reading from it (the run is reversed).
func takeDown(r *runCtx) []step {
	var out []step
	for _, s := range r.def.Slots {
		if d, ok := r.slots[s.Name]; ok && d.Status != string(deploy.Destroyed) {
			out = append(out, step{name: s.Name, slot: s.Name, action: "destroy", after: s.Upstream()})
		}
	}
	return out
}

// startDestroy destroys one slot's deployment; one never deployed is let go without the engine.
func startDestroy(ctx context.Context, r *runCtx, s dbgen.StackRunStepsRow) (uuid.UUID, map[string]any, error) {
	d, ok := r.slots[s.Slot]
	if !ok || d.Status == string(deploy.Destroyed) {
		return uuid.Nil, nil, nil
	}
	gone, err := deploy.Discard(ctx, r.q, d.ID)
	if err != nil || gone {
		return uuid.Nil, map[string]any{"deployment": d.ID}, err
	}
	op, err := r.deps.deploys.StartTx(ctx, r.tx, r.actor, d.ID, deploy.KindDestroy)
	return op, map[string]any{"deployment": d.ID}, err
}

// destroyKind takes every slot down, in reverse order, and ends the instance destroyed.
var destroyKind = kind{
	reverse: true,
	begin: func(ctx context.Context, r *runCtx) ([]step, error) {
		if lifecycle.InstanceStatus(r.inst.Status) == lifecycle.InstanceDestroyed {
			return nil, refuse("%s is destroyed already", r.inst.Name)
		}
		return takeDown(r), move(ctx, r.q, r.inst, lifecycle.InstanceDestroying, "")
	},
	start: startDestroy,
	end: func(ctx context.Context, r *runCtx, outcome graph.Step, refusal error) error {
		if outcome.Done {
			return move(ctx, r.q, r.inst, lifecycle.InstanceDestroyed, "")
		}
		return move(ctx, r.q, r.inst, lifecycle.InstanceFailed, "Destroying stopped: "+failure(r, outcome, refusal)+". Destroy again to take down what is left.")
	},
}

// compensateKind takes down what a failed first deploy made, in reverse order; the instance
// stays failed, saying what happened.
var compensateKind = kind{
	reverse: true,
	begin: func(ctx context.Context, r *runCtx) ([]step, error) {
		return takeDown(r), nil
	},
	start: startDestroy,
	end: func(ctx context.Context, r *runCtx, outcome graph.Step, refusal error) error {
		var in struct{ Reason string }
		_ = json.Unmarshal(r.run.Inputs, &in)
		why := in.Reason
		if outcome.Done {
			return move(ctx, r.q, r.inst, lifecycle.InstanceFailed, why+" What it had made was removed.")
		}
		return move(ctx, r.q, r.inst, lifecycle.InstanceFailed, why+" Removing what it made stopped too: "+failure(r, outcome, refusal)+". Destroy the instance to take down what is left.")
	},
}
