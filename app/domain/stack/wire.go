package stack

import (
	"context"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"nimbus/app/domain/component"
	"nimbus/app/domain/resolver"
	"nimbus/app/kernel/problem"
	"nimbus/db/dbgen"
)

// Schemas are what a definition's wiring is checked and evaluated against: the stack's
// parameters, and the inputs and outputs of each slot's pinned component version, by slot.
type Schemas struct {
	Params  *component.Schema
	Inputs  map[string]*component.Schema
	Outputs map[string]*component.Schema
	// Bindings are the inputs each slot's component leaves to resolvers, by slot.
	Bindings map[string]map[string]bool
	// Types are the semantic types of the slots' components, by slot: an input that names
	// another deployment (x-refers-to) is wired only to a slot of the type it names.
	Types map[string]string
}

// LoadSchemas reads the schemas of the component versions a definition's slots pin. A slot
// whose version is not there has no schemas: validation says so.
func LoadSchemas(ctx context.Context, q *dbgen.Queries, def Definition) (Schemas, error) {
	s := Schemas{
		Params: component.ParseSchema("parameters", def.Parameters, &problem.ValidationError{}),
		Inputs: map[string]*component.Schema{}, Outputs: map[string]*component.Schema{},
		Bindings: map[string]map[string]bool{}, Types: map[string]string{},
	}
	ids, versions := make([]uuid.UUID, len(def.Slots)), make([]int32, len(def.Slots))
	for i, sl := range def.Slots {
		ids[i], versions[i] = sl.Component, int32(sl.Version)
	}
	rows, err := q.SlotSchemas(ctx, dbgen.SlotSchemasParams{ComponentIds: ids, Versions: versions})
	if err != nil {
		return s, fmt.Errorf("read the schemas of the slots: %w", err)
	}
	for _, sl := range def.Slots {
		for _, r := range rows {
			if r.ComponentID != sl.Component || int(r.Version) != sl.Version {
				continue
			}
			ignore := &problem.ValidationError{}
			s.Inputs[sl.Name] = component.ParseSchema("input_schema", r.InputSchema, ignore)
			s.Outputs[sl.Name] = component.ParseSchema("output_schema", r.OutputSchema, ignore)
			s.Bindings[sl.Name] = boundInputs(r.ResolverBindings)
			s.Types[sl.Name] = r.SemanticType
		}
	}
	return s, nil
}

// SlotScope is what the wiring of a slot may read: the stack's parameters and the outputs of
// the slots upstream of it.
func (s Schemas) SlotScope(slot Slot) Scope {
	scope := Scope{}
	scope.AddSchema("params", s.Params)
	for _, up := range slot.Upstream() {
		scope.AddSchema("slots."+up+".outputs", s.Outputs[up])
	}
	return scope
}

// ActionScope is what a day-2 operation's or a transition's action may read: the stack's
// parameters, the operation's inputs (nil for a transition) and every slot's outputs, since
// every slot is deployed by then.
func (s Schemas) ActionScope(inputs *component.Schema) Scope {
	scope := Scope{}
	scope.AddSchema("params", s.Params)
	scope.AddSchema("inputs", inputs)
	for slot, out := range s.Outputs {
		scope.AddSchema("slots."+slot+".outputs", out)
	}
	return scope
}

// Values keys what expressions read by their dotted names: the parameters, an operation's
// inputs and the slots' outputs.
func Values(params, inputs map[string]any, outputs map[string]map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range params {
		out["params."+k] = v
	}
	for k, v := range inputs {
		out["inputs."+k] = v
	}
	for slot, o := range outputs {
		for k, v := range o {
			out["slots."+slot+".outputs."+k] = v
		}
	}
	return out
}

// Wire works out a slot's inputs from its wiring: literals as written, parameters and upstream
// outputs as they are, expressions evaluated. An input whose source has no value (a parameter
// left out, an output the upstream slot did not give) is left out, to take its default or its
// resolver.
func Wire(ctx context.Context, s Schemas, slot Slot, values map[string]any) (map[string]any, error) {
	out := map[string]any{}
	for _, name := range sortedKeys(slot.Inputs) {
		w := slot.Inputs[name]
		var v any
		switch w.Kind {
		case Literal:
			v = w.Value
		case Param:
			v = values["params."+w.Param]
		case Output:
			v = values["slots."+w.Slot+".outputs."+w.Output]
		case Expression:
			var err error
			if v, err = s.evalInput(ctx, slot, name, w.Expr, values); err != nil {
				return nil, fmt.Errorf("slot %s, input %s: %w", slot.Name, name, err)
			}
		}
		if v != nil {
			out[name] = v
		}
	}
	return out, nil
}

// evalInput works out the expression wired to a slot's input, checked against the input's type.
func (s Schemas) evalInput(ctx context.Context, slot Slot, input, expr string, values map[string]any) (any, error) {
	var want *component.Property
	if in := s.Inputs[slot.Name]; in != nil {
		want = in.Properties[input]
	}
	e, err := Compile(expr, s.SlotScope(slot), want)
	if err != nil {
		return nil, err
	}
	return e.Eval(ctx, values)
}

// Known is an input's value that the parameters alone give, with how it is wired and the
// parameters it is worked out from (none for a literal).
type Known struct {
	Value  any
	Kind   WiringKind
	Params []string
}

// FromParams works out the inputs of a slot that the parameters alone give: literals,
// parameters, and expressions that read parameters only. An input the component marks secret,
// or one read from a secret parameter, is left out, so that what shows or quotes these values
// shows no secret; so is one without a value yet or whose expression fails (its deploy says
// why).
func FromParams(ctx context.Context, s Schemas, slot Slot, params map[string]any) map[string]Known {
	values := Values(params, nil, nil)
	return s.known(slot, func(name string, w Wiring) any {
		switch w.Kind {
		case Param:
			return params[w.Param]
		case Expression:
			v, err := s.evalInput(ctx, slot, name, w.Expr, values)
			if err != nil {
				return nil
			}
			return v
		}
		return w.Value
	})
}

// FromWired is FromParams over the inputs Wire gave a slot already: what of them the
// parameters alone give, left out as FromParams leaves out, without evaluating anything again.
func FromWired(s Schemas, slot Slot, inputs map[string]any) map[string]Known {
	return s.known(slot, func(name string, _ Wiring) any { return inputs[name] })
}

// known is what of a slot's inputs the parameters alone give, each valued by value; one
// valued nil is left out.
func (s Schemas) known(slot Slot, value func(name string, w Wiring) any) map[string]Known {
	out := map[string]Known{}
	for name, w := range slot.Inputs {
		k := Known{Kind: w.Kind}
		switch w.Kind {
		case Param:
			k.Params = []string{w.Param}
		case Expression:
			if len(SlotsIn(w.Expr)) > 0 {
				continue
			}
			k.Params = ParamsIn(w.Expr)
		case Output:
			continue
		}
		if secret(s.Inputs[slot.Name], name) || slices.ContainsFunc(k.Params, func(p string) bool { return secret(s.Params, p) }) {
			continue
		}
		if k.Value = value(name, w); k.Value != nil {
			out[name] = k
		}
	}
	return out
}

// secret reports whether schema, which may be missing, marks name secret.
func secret(schema *component.Schema, name string) bool {
	return schema != nil && schema.Secret(name)
}

// boundInputs are the inputs a component version leaves to resolvers.
func boundInputs(raw []byte) map[string]bool {
	out := map[string]bool{}
	bindings, err := resolver.ParseBindings(raw)
	if err != nil {
		return out
	}
	for _, b := range bindings {
		out[b.Input] = true
	}
	return out
}
