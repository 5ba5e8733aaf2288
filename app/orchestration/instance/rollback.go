package instance

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/google/uuid"

	"nimbus/app/kernel/graph"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/orchestration/deploy"
	"nimbus/db/dbgen"
)

// rollbackKind returns an instance to the version a failed upgrade left, every slot as it was.
// First what the upgrade deployed is taken down, newest first, one at a time: a slot another
// component took over frees its deployment's name for the old one. Then each slot of the old
// version the upgrade touched goes back, in the old version's graph order: one it destroyed is
// deployed again from the old definition and wiring, one whose destroy failed is applied again,
// one it upgraded or updated returns to its version and parameters; and a slot reading from one
// deployed again is wired anew, since what it reads changed.
var rollbackKind = kind{
	begin: func(ctx context.Context, r *runCtx) ([]step, error) {
		var in struct {
			Upgrade uuid.UUID `json:"upgrade"`
		}
		if err := json.Unmarshal(r.run.Inputs, &in); err != nil {
			return nil, err
		}
		done, err := r.q.StackRunSteps(ctx, in.Upgrade)
		if err != nil {
			return nil, err
		}
		var out []step
		// The step of the upgrade that changed or destroyed each slot the old version has.
		touched := map[string]dbgen.StackRunStepsRow{}
		for i := len(done) - 1; i >= 0; i-- {
			s := done[i]
			if !s.OperationID.Valid {
				continue
			}
			if s.Action != "deploy" {
				touched[s.Slot] = s
				continue
			}
			// One that deployed a slot is taken down whatever became of it.
			back := step{name: s.Name, slot: s.Slot, action: "destroy"}
			if len(out) > 0 {
				back.after = []string{out[len(out)-1].name}
			}
			out = append(out, back)
		}
		return append(out, restore(r, touched, out)...), nil
	},
	start: func(ctx context.Context, r *runCtx, s dbgen.StackRunStepsRow) (uuid.UUID, map[string]any, error) {
		switch s.Action {
		case "destroy":
			return startDestroy(ctx, r, s)
		case "deploy":
			return startDeploy(ctx, r, s)
		}
		return startRevert(ctx, r, s)
	},
	end: func(ctx context.Context, r *runCtx, outcome graph.Step, refusal error) error {
		var in struct{ Reason string }
		_ = json.Unmarshal(r.run.Inputs, &in)
		if outcome.Done {
			return move(ctx, r.q, r.inst, lifecycle.InstanceActive, fmt.Sprintf("%s Its slots were rolled back to version %d.", in.Reason, r.run.ToVersion.Int32))
		}
		return move(ctx, r.q, r.inst, lifecycle.InstanceDegraded, fmt.Sprintf("%s Rolling back stopped too: %s. Upgrade again, or destroy the instance.",
			in.Reason, failure(r, outcome, refusal)))
	},
}

// restore are the steps returning the old version's slots (r.def) to what they were, given the
// upgrade's step that touched each, after the steps taking down what it deployed (first). Each
// waits for the steps of the slots it reads from.
func restore(r *runCtx, touched map[string]dbgen.StackRunStepsRow, first []step) []step {
	redeployed := func(slot string) bool {
		s, ok := touched[slot]
		return ok && s.Action == "destroy" && stepState(s) == graph.Succeeded
	}
	// What a slot deployed again gives out is new, and so is what a slot wired from it gives.
	fresh := map[string]bool{}
	for moved := true; moved; {
		moved = false
		for _, sl := range r.def.Slots {
			if fresh[sl.Name] {
				continue
			}
			if redeployed(sl.Name) || slices.ContainsFunc(sl.Upstream(), func(up string) bool { return fresh[up] }) {
				fresh[sl.Name], moved = true, true
			}
		}
	}
	taken := map[string]bool{}
	for _, s := range first {
		taken[s.name] = true
	}
	names := map[string]string{}
	var out []step
	for _, sl := range r.def.Slots {
		s := step{name: sl.Name, slot: sl.Name, action: "update", detail: map[string]any{}}
		if taken[s.name] {
			s.name += "~old"
		}
		u, ok := touched[sl.Name]
		if ok {
			_ = json.Unmarshal(u.Detail, &s.detail)
		}
		d, deployed := r.slots[sl.Name]
		switch {
		case redeployed(sl.Name):
			s.action, s.detail = "deploy", nil
		case ok && (u.Action == "destroy" || stepState(u) == graph.Succeeded):
			// A destroy that failed is applied again; a change is undone. A change that failed
			// was undone by its own operation.
		case fresh[sl.Name] && deployed && d.Status != string(deploy.Destroyed):
			s.detail = map[string]any{"deployment": d.ID}
		default:
			continue
		}
		if s.action == "update" && fresh[sl.Name] {
			s.detail["rewire"] = true
		}
		names[sl.Name] = s.name
		out = append(out, s)
	}
	for i, s := range out {
		sl, _ := r.def.Slot(s.slot)
		for _, up := range sl.Upstream() {
			if n, ok := names[up]; ok {
				out[i].after = append(out[i].after, n)
			}
		}
		if len(first) > 0 {
			out[i].after = append(out[i].after, first[len(first)-1].name)
		}
	}
	return out
}

// startRevert returns one slot's deployment to what it was before the upgrade, as its step
// recorded it: its version and parameters when the upgrade changed them (nothing to change when
// the upgrade's destroy of it failed: it is applied again), and the inputs the old version wires
// worked out anew when the slot reads from one deployed again.
func startRevert(ctx context.Context, r *runCtx, s dbgen.StackRunStepsRow) (uuid.UUID, map[string]any, error) {
	var was struct {
		Deployment     uuid.UUID      `json:"deployment"`
		FromVersion    int            `json:"from_version"`
		FromParameters map[string]any `json:"from_parameters"`
		Rewire         bool           `json:"rewire"`
	}
	if err := json.Unmarshal(s.Detail, &was); err != nil {
		return uuid.Nil, nil, err
	}
	d, ok := r.slots[s.Slot]
	if !ok || d.ID != was.Deployment {
		return uuid.Nil, nil, nil
	}
	params := map[string]any{}
	if was.FromParameters != nil {
		now := map[string]any{}
		if err := json.Unmarshal(d.Parameters, &now); err != nil {
			return uuid.Nil, nil, err
		}
		params = maps.Clone(was.FromParameters)
		for k := range now {
			if _, had := params[k]; !had {
				params[k] = nil
			}
		}
	}
	if was.Rewire {
		slot, _ := r.def.Slot(s.Slot)
		inputs, err := r.wire(ctx, slot)
		if err != nil {
			return uuid.Nil, nil, err
		}
		maps.Copy(params, inputs)
	}
	kind, c := deploy.KindUpdate, deploy.Change{Parameters: params}
	if was.FromVersion != 0 && int32(was.FromVersion) != d.Version {
		kind, c.Version, c.Back = deploy.KindUpgrade, was.FromVersion, true
	}
	op, err := r.deps.deploys.RequestTx(ctx, r.tx, r.actor, d.ID, kind, c)
	return op, nil, err
}
