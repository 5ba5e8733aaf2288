package instance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/domain/component"
	"nimbus/app/domain/stack"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/graph"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// RunDay2 runs a named day-2 operation of the instance's version: its actions, in order, and
// then the transition it triggers, if any.
const RunDay2 RunKind = "day2"

// RunOperation asks for the day-2 operation name of an instance's version to run with inputs,
// checked against its input schema. It is queued behind the run under way, if any, and checked
// against the state when its turn comes; with no run under way, a state the operation does not
// run in is refused at once.
func (s *Service) RunOperation(ctx context.Context, actor access.Principal, id uuid.UUID, name string, inputs map[string]any) (Run, error) {
	var runID uuid.UUID
	err := db.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Queries(tx)
		inst, err := s.lockFor(ctx, q, actor, id, access.StackInstanceDay2)
		if err != nil {
			return err
		}
		def, err := stack.LoadVersion(ctx, q, inst.StackID, int(inst.Version))
		if err != nil {
			return err
		}
		op, ok := def.Operation(name)
		if !ok {
			return problem.Invalid("operation", "exists", "version %d of the stack has no day-2 operation %q", inst.Version, name)
		}
		v := &problem.ValidationError{}
		schema := component.ParseSchema("input_schema", op.InputSchema, &problem.ValidationError{})
		given := schema.Apply("inputs", inputs, v)
		if err := v.Err(); err != nil {
			return err
		}
		shown := map[string]any{}
		for k, val := range given {
			if schema.Secret(k) {
				val = "[secret]"
			}
			shown[k] = val
		}
		// Secret inputs are kept sealed with the run, bound to its ID, and opened only when an
		// action works out a slot's inputs.
		runID = uuid.New()
		plain, keyID, sealed, err := s.run.seal(runID, schema, given)
		if err != nil {
			return err
		}
		if idle, err := idle(ctx, q, inst.ID); err != nil {
			return err
		} else if idle {
			if err := offers(inst, op); err != nil {
				return problem.Invalid("operation", "state", "%v", err)
			}
		}
		run, err := s.run.queue(ctx, tx, inst, dbgen.CreateStackRunParams{ID: uuid.NullUUID{UUID: runID, Valid: true}, Kind: string(RunDay2),
			Operation: op.Name, Inputs: plain, SecretInputs: sealed, SecretKeyID: keyID,
			Source: source(ctx), RequestedBy: uuid.NullUUID{UUID: actor.UserID, Valid: actor.UserID != uuid.Nil}})
		if err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Tenant: inst.TenantID, Action: "stack_instance.run_operation", TargetType: "stack_instance",
			TargetID: inst.ID.String(), Diff: map[string]any{"name": inst.Name, "operation": op.Name, "inputs": shown, "run": run.ID}})
	})
	if err != nil {
		return Run{}, fmt.Errorf("run %s on stack instance: %w", name, err)
	}
	return s.runByID(ctx, runID)
}

// offers refuses, in words, a day-2 operation the instance's state does not offer. One that
// names no required states runs in any.
func offers(inst dbgen.StackInstance, op stack.Operation) error {
	if err := settled(inst); err != nil {
		return err
	}
	if len(op.RequiredStates) > 0 && !slices.Contains(op.RequiredStates, *inst.CurrentState) {
		return refuse("%s runs in state %s; %s is in %s", op.Name, strings.Join(op.RequiredStates, " or "), inst.Name, *inst.CurrentState)
	}
	return nil
}

// day2Kind runs a day-2 operation's actions, each after the one before, and queues the
// transition it triggers once they all succeeded. When one fails the instance is degraded.
var day2Kind = kind{
	begin: func(ctx context.Context, r *runCtx) ([]step, error) {
		op, ok := r.def.Operation(r.run.Operation)
		if !ok {
			return nil, refuse("the instance's version has no day-2 operation %s", r.run.Operation)
		}
		if err := offers(r.inst, op); err != nil {
			return nil, err
		}
		return actionSteps(op.Actions), nil
	},
	start: func(ctx context.Context, r *runCtx, s dbgen.StackRunStepsRow) (uuid.UUID, map[string]any, error) {
		op, ok := r.def.Operation(r.run.Operation)
		if !ok {
			return uuid.Nil, nil, fmt.Errorf("no day-2 operation %s", r.run.Operation)
		}
		inputs := component.ParseSchema("input_schema", op.InputSchema, &problem.ValidationError{})
		return startAction(ctx, r, op.Actions, inputs, s)
	},
	end: func(ctx context.Context, r *runCtx, outcome graph.Step, refusal error) error {
		if !outcome.Done {
			if len(r.operations()) == 0 {
				return nil // refused before anything ran: the run says why, the instance is as it was
			}
			return move(ctx, r.q, r.inst, lifecycle.InstanceDegraded, fmt.Sprintf("The day-2 operation %s stopped: %s.", r.run.Operation, failure(r, outcome, refusal)))
		}
		if err := r.heal(ctx); err != nil {
			return err
		}
		op, _ := r.def.Operation(r.run.Operation)
		if err := r.keepParams(ctx, op); err != nil {
			return err
		}
		if op.TriggersTransition != "" {
			// Behind this run: it starts once this one has ended, and is checked against the
			// state then.
			if _, err := record(ctx, r.q, dbgen.CreateStackRunParams{InstanceID: r.inst.ID, Kind: string(RunTransition),
				Trigger: op.TriggersTransition, Inputs: []byte("{}"), Source: "day2", RequestedBy: r.run.RequestedBy}); err != nil {
				return err
			}
		}
		return audit.Record(ctx, r.q, r.actor, audit.Event{Tenant: r.inst.TenantID, Action: "stack_instance.day2",
			TargetType: "stack_instance", TargetID: r.inst.ID.String(), Diff: map[string]any{"name": r.inst.Name,
				"operation": r.run.Operation, "run": r.run.ID}})
	},
}

// keepParams makes the plain inputs of a day-2 operation that succeeded the instance's
// parameters where they are named like one and fit it: after an operation such as change_tier
// the instance says what it now is, and an upgrade, which works its slots' inputs out from the
// parameters again, keeps it.
func (r *runCtx) keepParams(ctx context.Context, op stack.Operation) error {
	given := map[string]any{}
	if err := json.Unmarshal(r.run.Inputs, &given); err != nil {
		return err
	}
	params := component.ParseSchema("parameters", r.def.Parameters, &problem.ValidationError{})
	inputs := component.ParseSchema("input_schema", op.InputSchema, &problem.ValidationError{})
	if params == nil || inputs == nil {
		return nil
	}
	kept := map[string]any{}
	for name, v := range given {
		if !inputs.Secret(name) && !params.Secret(name) && params.Check(name, v) == "" {
			kept[name] = v
		}
	}
	if len(kept) == 0 {
		return nil
	}
	raw, err := json.Marshal(kept)
	if err != nil {
		return err
	}
	return r.q.MergeStackInstanceParameters(ctx, dbgen.MergeStackInstanceParametersParams{ID: r.inst.ID, Parameters: raw})
}

// Offer is something a person may do to an instance from its page: a day-2 operation of its
// version, or a trigger its state takes; Offered says whether it can be done now, Reason why
// not.
type Offer struct {
	Kind        string `json:"kind"` // "operation" or "transition"
	Name        string `json:"name"` // the operation's name, or the trigger
	DisplayName string `json:"display_name,omitempty"`
	Description string `json:"description,omitempty"`
	// InputSchema, RequiredStates and TriggersTransition are an operation's.
	InputSchema        json.RawMessage `json:"input_schema,omitempty"`
	RequiredStates     []string        `json:"required_states,omitempty"`
	TriggersTransition string          `json:"triggers_transition,omitempty"`
	// To is the state a trigger leads to.
	To      string `json:"to,omitempty"`
	Offered bool   `json:"offered"`
	Reason  string `json:"reason,omitempty"`
}

// Operations lists an instance's day-2 operations, each offered or not in its current state
// (and why not), then the triggers its state takes.
func (s *Service) Operations(ctx context.Context, actor access.Principal, id uuid.UUID) ([]Offer, error) {
	q := db.Queries(s.pool)
	inst, err := q.GetStackInstance(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && !actor.Can(access.EnvironmentRead, inst.TenantID) {
		return nil, problem.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	def, err := stack.LoadVersion(ctx, q, inst.StackID, int(inst.Version))
	if err != nil {
		return nil, err
	}
	row := instanceOf(inst)
	out := []Offer{}
	for _, op := range def.Operations {
		o := Offer{Kind: "operation", Name: op.Name, DisplayName: op.DisplayName, Description: op.Description, InputSchema: op.InputSchema,
			RequiredStates: op.RequiredStates, TriggersTransition: op.TriggersTransition, Offered: true}
		if err := offers(row, op); err != nil {
			o.Offered, o.Reason = false, err.Error()
		}
		out = append(out, o)
	}
	out = append(out, triggerOffers(row, def)...)
	if !actor.Can(access.StackInstanceDay2, inst.TenantID) {
		for i := range out {
			out[i].Offered, out[i].Reason = false, "you may not run day-2 operations or fire triggers in "+inst.TenantName
		}
	}
	return out, nil
}

// instanceOf is the stored instance a read row holds.
func instanceOf(r dbgen.GetStackInstanceRow) dbgen.StackInstance {
	return dbgen.StackInstance{ID: r.ID, TenantID: r.TenantID, EnvironmentID: r.EnvironmentID, StackID: r.StackID, Version: r.Version,
		Name: r.Name, Status: r.Status, CurrentState: r.CurrentState, StateEnteredAt: r.StateEnteredAt}
}
