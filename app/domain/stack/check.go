package stack

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"nimbus/app/domain/component"
	"nimbus/app/kernel/graph"
	"nimbus/app/kernel/problem"
	"nimbus/db/dbgen"
)

var (
	stackName     = regexp.MustCompile(`^[a-z][a-z0-9-]{1,62}$`)
	slotName      = regexp.MustCompile(`^[a-z][a-z0-9_]{0,19}$`)
	stateName     = regexp.MustCompile(`^[a-z][a-z0-9_]{0,39}$`)
	operationName = stateName
)

// Owner is where a stack belongs: its provider, and its tenant (nil for a provider stack). It
// decides which components its slots may use.
type Owner struct {
	TenantID   *uuid.UUID
	ProviderID uuid.UUID
}

// Check lists what keeps def from being published in scope, each problem under the path of
// what it is about (slots.web.inputs.cores) with the rule it breaks. None: it may be published.
func Check(ctx context.Context, q *dbgen.Queries, def Definition, scope Owner) ([]problem.FieldError, error) {
	v := &problem.ValidationError{}
	schemas, err := LoadSchemas(ctx, q, def)
	if err != nil {
		return nil, err
	}
	component.ParseSchema("parameters", def.Parameters, v)
	if schemas.Params == nil { // they do not parse: the rest is checked against none
		schemas.Params = &component.Schema{Type: "object", Properties: map[string]*component.Property{}}
	}
	unusable, err := checkComponents(ctx, q, def, scope, v)
	if err != nil {
		return nil, err
	}
	// What a component the stack may not use takes and gives is none of its business.
	for _, slot := range unusable {
		delete(schemas.Inputs, slot)
		delete(schemas.Outputs, slot)
		delete(schemas.Bindings, slot)
	}
	checkSlots(def, schemas, v)
	checkMachine(def, schemas, v)
	checkOperations(def, schemas, v)
	checkRoutes(def, v)
	return v.Fields, nil
}

// slotPath is where problems of the i-th slot are reported: by its name, or its position
// while it has none.
func slotPath(i int, s Slot) string {
	if s.Name == "" {
		return fmt.Sprintf("slots.%d", i)
	}
	return "slots." + s.Name
}

// checkComponents checks that each slot pins a published, live version of a component of the
// stack's provider that the stack's scope may use, and returns the slots whose component it
// may not use.
func checkComponents(ctx context.Context, q *dbgen.Queries, def Definition, scope Owner, v *problem.ValidationError) ([]string, error) {
	ids := make([]uuid.UUID, len(def.Slots))
	for i, s := range def.Slots {
		ids[i] = s.Component
	}
	rows, err := q.SlotComponents(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("read the slots' components: %w", err)
	}
	var unusable []string
	for i, s := range def.Slots {
		path := slotPath(i, s)
		var found *dbgen.SlotComponentsRow
		published, archived := false, false
		for j, r := range rows {
			if r.ID != s.Component {
				continue
			}
			found = &rows[j]
			if r.Version.Valid && int(r.Version.Int32) == s.Version {
				published, archived = true, r.ArchivedAt != nil
			}
		}
		visible := found != nil && found.DeletedAt == nil &&
			(!found.TenantID.Valid || scope.TenantID != nil && found.TenantID.UUID == *scope.TenantID)
		if !visible {
			unusable = append(unusable, s.Name)
		}
		switch {
		case !visible && found != nil && found.TenantID.Valid && scope.TenantID == nil && found.DeletedAt == nil:
			v.Add(path+".component_id", "scope", "component %s belongs to a tenant; a provider stack may use only provider-level components", found.Name)
		case !visible:
			v.Add(path+".component_id", "exists", "no component with this ID that this stack may use")
		case found.ProviderID != scope.ProviderID:
			v.Add(path+".component_id", "provider", "component %s is of another provider than the stack", found.Name)
		case !published:
			v.Add(path+".version", "published", "component %s has no published version %d", found.Name, s.Version)
		case archived:
			v.Add(path+".version", "archived", "version %d of component %s is archived; pick a newer one", s.Version, found.Name)
		}
	}
	return unusable, nil
}

func checkSlots(def Definition, schemas Schemas, v *problem.ValidationError) {
	if len(def.Slots) == 0 {
		v.Add("slots", "required", "a stack needs at least one slot")
	}
	names := map[string]bool{}
	for _, s := range def.Slots {
		names[s.Name] = true
	}
	seen := map[string]bool{}
	nodes := make([]graph.Node, 0, len(def.Slots))
	for i, s := range def.Slots {
		path := slotPath(i, s)
		switch {
		case !slotName.MatchString(s.Name):
			v.Add(path+".name", "pattern", "a slot's name starts with a lowercase letter and holds only lowercase letters, digits and _ (at most 20)")
		case seen[s.Name]:
			v.Add(path+".name", "unique", "another slot is named %s", s.Name)
		}
		seen[s.Name] = true
		in := schemas.Inputs[s.Name]
		if in != nil {
			for _, name := range sortedKeys(s.Inputs) {
				checkWiring(def, schemas, s, name, s.Inputs[name], path+".inputs."+name, v)
			}
			for _, req := range in.Required {
				p := in.Properties[req]
				if _, wired := s.Inputs[req]; !wired && p != nil && p.Default == nil && !schemas.Bindings[s.Name][req] {
					v.Add(path+".inputs."+req, "required", "input %s is required: wire it, since the component gives it no default and no resolver fills it", req)
				}
			}
		}
		for _, d := range s.DependsOn {
			if !names[d] || d == s.Name {
				v.Add(path+".depends_on", "exists", "depends on %q, which is not another slot of the stack", d)
			}
		}
		nodes = append(nodes, graph.Node{Name: s.Name, After: s.Upstream()})
	}
	if cycle := graph.Cycle(nodes); cycle != nil {
		v.Add("slots", "cycle", "slots %s wait for each other", strings.Join(cycle, " → "))
	}
}

// checkWiring checks where one input of slot s takes its value from.
func checkWiring(def Definition, schemas Schemas, s Slot, input string, w Wiring, path string, v *problem.ValidationError) {
	want := schemas.Inputs[s.Name].Properties[input]
	if want == nil {
		v.Add(path, "exists", "the component has no input %s", input)
		return
	}
	switch w.Kind {
	case Literal:
		if msg := schemas.Inputs[s.Name].Check(input, w.Value); msg != "" {
			v.Add(path, "value", "the value %v %s", w.Value, msg)
		}
	case Param:
		p := schemas.Params.Properties[w.Param]
		switch {
		case p == nil:
			v.Add(path, "param", "the stack has no parameter %q", w.Param)
		case !sameType(want, p):
			v.Add(path, "type", "parameter %s is %s, and this input takes %s", w.Param, typeName(p), typeName(want))
		case p.Secret && !want.Secret:
			v.Add(path, "secret", "parameter %s is secret, and input %s is not: its value would be kept in plain text", w.Param, input)
		}
	case Output:
		out, known := schemas.Outputs[w.Slot]
		_, isSlot := def.Slot(w.Slot)
		switch {
		case w.Slot == s.Name:
			v.Add(path, "slot", "a slot cannot read its own outputs")
		case !isSlot:
			v.Add(path, "slot", "the stack has no slot %q", w.Slot)
		case !known:
			// The upstream slot's component is reported where it is named.
		case out.Properties[w.Output] == nil:
			v.Add(path, "output", "slot %s's component has no output %q", w.Slot, w.Output)
		case !sameType(want, out.Properties[w.Output]):
			v.Add(path, "type", "output %s of slot %s is %s, and this input takes %s", w.Output, w.Slot, typeName(out.Properties[w.Output]), typeName(want))
		case want.RefersTo != nil:
			checkRefers(want.RefersTo, schemas.Types[w.Slot], input, w, path, v)
		}
	case Expression:
		if _, err := Compile(w.Expr, schemas.SlotScope(s), want); err != nil {
			v.Add(path, "expression", "%s", err)
			return
		}
		if want.Secret {
			return
		}
		for _, name := range ParamsIn(w.Expr) {
			if p := schemas.Params.Properties[name]; p != nil && p.Secret {
				v.Add(path, "secret", "the expression reads secret parameter %s, and input %s is not secret: its value would be kept in plain text", name, input)
			}
		}
	default:
		v.Add(path, "kind", "the wiring's kind must be literal, param, output or expr, not %q", w.Kind)
	}
}

// checkRefers refuses an input that names another deployment (x-refers-to) wired to a slot of
// another semantic type, or to an output other than the one whose value names it: the value
// would name nothing the input can join.
func checkRefers(ref *component.Reference, slotType, input string, w Wiring, path string, v *problem.ValidationError) {
	switch {
	case slotType != ref.SemanticType:
		v.Add(path, "refers_to", "input %s names a %s, and slot %s is a %s: choose a slot of type %s", input, ref.SemanticType, w.Slot, slotType, ref.SemanticType)
	case w.Output != ref.Output:
		v.Add(path, "refers_to", "input %s names a %s by its output %s, not %s", input, ref.SemanticType, ref.Output, w.Output)
	}
}

// sameType reports whether a value of got may be given where want is asked for: the same
// type, or an integer for a number.
func sameType(want, got *component.Property) bool {
	if want.Type == "number" && got.Type == "integer" {
		return true
	}
	if want.Type != got.Type || want.IsMap() != got.IsMap() {
		return false
	}
	return want.Items == nil || got.Items == nil || sameType(want.Items, got.Items)
}

func typeName(p *component.Property) string {
	if p.IsMap() {
		return "a map of strings"
	}
	switch p.Type {
	case "integer":
		return "an integer"
	case "array", "object":
		return "an " + p.Type
	case "boolean":
		return "true or false"
	}
	return "a " + p.Type
}

func checkMachine(def Definition, schemas Schemas, v *problem.ValidationError) {
	m := def.Machine
	if len(m.States) == 0 {
		v.Add("machine.states", "required", "the state machine needs at least one state")
		return
	}
	states := map[string]State{}
	initial := 0
	for i, s := range m.States {
		path := fmt.Sprintf("machine.states.%d", i)
		if s.Name != "" {
			path = "machine.states." + s.Name
		}
		switch _, dup := states[s.Name]; {
		case !stateName.MatchString(s.Name):
			v.Add(path+".name", "pattern", "a state's name starts with a lowercase letter and holds only lowercase letters, digits and _ (at most 40)")
		case dup:
			v.Add(path+".name", "unique", "another state is named %s", s.Name)
		}
		states[s.Name] = s
		if s.Initial {
			initial++
		}
	}
	if initial != 1 {
		v.Add("machine.states", "initial", "exactly one state must be initial; %d are", initial)
	}
	triggers := map[[2]string]bool{}
	for i, t := range m.Transitions {
		path := fmt.Sprintf("machine.transitions.%d", i)
		from, fromKnown := states[t.From]
		if !fromKnown {
			v.Add(path+".from", "exists", "no state %q", t.From)
		} else if from.Terminal {
			v.Add(path+".from", "terminal", "state %s is terminal: nothing leaves it", t.From)
		}
		if _, ok := states[t.To]; !ok {
			v.Add(path+".to", "exists", "no state %q", t.To)
		}
		switch key := [2]string{t.From, t.Trigger}; {
		case !stateName.MatchString(t.Trigger):
			v.Add(path+".trigger", "pattern", "a trigger's name starts with a lowercase letter and holds only lowercase letters, digits and _ (at most 40)")
		case triggers[key]:
			v.Add(path+".trigger", "unique", "another transition from %s has trigger %s", t.From, t.Trigger)
		default:
			triggers[key] = true
		}
		if t.Timeout != "" {
			if d, err := time.ParseDuration(t.Timeout); err != nil || d <= 0 {
				v.Add(path+".timeout", "duration", "the timeout must be a positive duration such as 30m or 2h")
			}
		}
		if t.OnTimeout != "" && !slices.Contains(m.Triggers(t.To), t.OnTimeout) {
			v.Add(path+".on_timeout", "trigger", "no transition leaves %s with trigger %q", t.To, t.OnTimeout)
		}
		if t.OnTimeout != "" && t.Timeout == "" {
			v.Add(path+".timeout", "required", "on_timeout needs a timeout")
		}
		for j, a := range t.Action {
			checkAction(def, schemas, nil, a, fmt.Sprintf("%s.action.%d", path, j), v)
		}
	}
	if start := m.Initial(); initial == 1 {
		reached := map[string]bool{start: true}
		for queue := []string{start}; len(queue) > 0; queue = queue[1:] {
			for _, t := range m.Transitions {
				if t.From == queue[0] && !reached[t.To] {
					reached[t.To] = true
					queue = append(queue, t.To)
				}
			}
		}
		for _, s := range m.States {
			if !reached[s.Name] && s.Name != "" {
				v.Add("machine.states."+s.Name, "reachable", "no transitions lead from %s to %s", start, s.Name)
			}
		}
	}
}

func checkOperations(def Definition, schemas Schemas, v *problem.ValidationError) {
	states := map[string]bool{}
	for _, s := range def.Machine.States {
		states[s.Name] = true
	}
	seen := map[string]bool{}
	for i, op := range def.Operations {
		path := fmt.Sprintf("operations.%d", i)
		if op.Name != "" {
			path = "operations." + op.Name
		}
		switch {
		case !operationName.MatchString(op.Name):
			v.Add(path+".name", "pattern", "an operation's name starts with a lowercase letter and holds only lowercase letters, digits and _ (at most 40)")
		case seen[op.Name]:
			v.Add(path+".name", "unique", "another operation is named %s", op.Name)
		}
		seen[op.Name] = true
		inputs := component.ParseSchema(path+".input_schema", op.InputSchema, v)
		if len(op.RequiredStates) == 0 {
			v.Add(path+".required_states", "required", "name at least one state in which the operation may run")
		}
		for _, s := range op.RequiredStates {
			if !states[s] {
				v.Add(path+".required_states", "exists", "no state %q", s)
			}
		}
		if len(op.Actions) == 0 {
			v.Add(path+".actions", "required", "an operation needs at least one action")
		}
		for j, a := range op.Actions {
			if inputs == nil {
				inputs = &component.Schema{Properties: map[string]*component.Property{}}
			}
			checkAction(def, schemas, inputs, a, fmt.Sprintf("%s.actions.%d", path, j), v)
		}
		if t := op.TriggersTransition; t != "" {
			for _, s := range op.RequiredStates {
				if states[s] && !slices.Contains(def.Machine.Triggers(s), t) {
					v.Add(path+".triggers_transition", "trigger", "no transition leaves %s with trigger %q", s, t)
				}
			}
		}
	}
}

// checkAction checks one action of an operation (inputs: the operation's input schema) or of
// a transition (inputs nil).
func checkAction(def Definition, schemas Schemas, inputs *component.Schema, a Action, path string, v *problem.ValidationError) {
	if _, ok := def.Slot(a.Slot); !ok {
		v.Add(path+".slot", "exists", "the stack has no slot %q", a.Slot)
		return
	}
	switch a.Do {
	case Update:
		if len(a.Inputs) == 0 {
			v.Add(path+".inputs", "required", "an update names the inputs it changes")
		}
	case Refresh, Upgrade, Redeploy:
		if len(a.Inputs) > 0 {
			v.Add(path+".inputs", "update", "only an update changes inputs")
		}
	default:
		v.Add(path+".do", "verb", "an action does update, refresh, upgrade or redeploy, not %q", a.Do)
	}
	in := schemas.Inputs[a.Slot]
	if in == nil {
		return // the slot's component is reported under the slot
	}
	scope := schemas.ActionScope(inputs)
	for _, name := range sortedKeys(a.Inputs) {
		want := in.Properties[name]
		if want == nil {
			v.Add(path+".inputs."+name, "exists", "slot %s's component has no input %s", a.Slot, name)
			continue
		}
		if _, err := Compile(a.Inputs[name], scope, want); err != nil {
			v.Add(path+".inputs."+name, "expression", "%s", err)
			continue
		}
		if want.Secret {
			continue
		}
		// A secret may flow only into a secret input, which the slot's deployment keeps sealed.
		for _, p := range ParamsIn(a.Inputs[name]) {
			if prop := schemas.Params.Properties[p]; prop != nil && prop.Secret {
				v.Add(path+".inputs."+name, "secret", "the expression reads secret parameter %s, and input %s of slot %s is not secret: its value would be kept in plain text", p, name, a.Slot)
			}
		}
		for _, in := range InputsIn(a.Inputs[name]) {
			if inputs != nil && inputs.Secret(in) {
				v.Add(path+".inputs."+name, "secret", "the expression reads secret input %s, and input %s of slot %s is not secret: its value would be kept in plain text", in, name, a.Slot)
			}
		}
	}
}
