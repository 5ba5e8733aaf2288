package stack

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// The stack editor is one form holding the whole draft, so that a save from any panel keeps
// what was typed in the others. Its fields are named by position (p.0.name, s.1.in.cores.kind,
// m.t.0.a.1.slot, o.0.p.2.type) and read back into a Definition; the button pressed names,
// in "op", what to do besides saving: add or remove a row, move a slot.

// editorForm reads the editor's fields.
type editorForm struct{ values url.Values }

func (f editorForm) get(name string) string { return strings.TrimSpace(f.values.Get(name)) }

// raw is a field as typed, with the newlines browsers send normalised.
func (f editorForm) raw(name string) string {
	return strings.ReplaceAll(f.values.Get(name), "\r\n", "\n")
}

func (f editorForm) has(name string) bool { _, ok := f.values[name]; return ok }

func (f editorForm) all(name string) []string { return f.values[name] }

// count is how many rows of a list the form holds: prefix.0.<key>, prefix.1.<key>, ...
func (f editorForm) count(prefix, key string) int {
	n := 0
	for f.has(fmt.Sprintf("%s.%d.%s", prefix, n, key)) {
		n++
	}
	return n
}

// paramTypes are the types a stack's or an operation's parameter may take in the editor.
var paramTypes = []string{"string", "integer", "number", "boolean"}

// paramsFrom builds a parameters schema from the rows under prefix. A value that does not
// fit its type is kept as typed, for the check to name and the author to fix.
func paramsFrom(f editorForm, prefix string) json.RawMessage {
	props := map[string]any{}
	var order, required []string
	for i := range f.count(prefix, "name") {
		at := func(k string) string { return f.get(fmt.Sprintf("%s.%d.%s", prefix, i, k)) }
		name := at("name")
		if name == "" {
			continue
		}
		typ := at("type")
		p := map[string]any{"type": typ}
		if v := at("title"); v != "" {
			p["title"] = v
		}
		if v := at("default"); v != "" {
			p["default"] = typed(v, typ)
		}
		if at("secret") != "" {
			p["x-secret"] = true
		}
		for _, k := range []string{"minimum", "maximum"} {
			if v := at(k); v != "" {
				p[k] = typed(v, "number")
			}
		}
		if v := at("enum"); v != "" {
			var enum []any
			for _, e := range strings.Split(v, ",") {
				enum = append(enum, typed(strings.TrimSpace(e), typ))
			}
			p["enum"] = enum
		}
		if v := at("pattern"); v != "" {
			p["pattern"] = v
		}
		props[name] = p
		order = append(order, name)
		if at("required") != "" {
			required = append(required, name)
		}
	}
	schema := map[string]any{"type": "object", "properties": props}
	if len(order) > 0 {
		schema["x-order"] = order
	}
	if len(required) > 0 {
		schema["required"] = required
	}
	raw, _ := json.Marshal(schema)
	return raw
}

// typed is text as a value of a schema type; text that is not one stays text.
func typed(text, typ string) any {
	switch typ {
	case "integer":
		if n, err := strconv.ParseInt(text, 10, 64); err == nil {
			return n
		}
	case "number":
		if n, err := strconv.ParseFloat(text, 64); err == nil {
			return n
		}
	case "boolean":
		if b, err := strconv.ParseBool(text); err == nil {
			return b
		}
	case "array", "object":
		var v any
		if json.Unmarshal([]byte(text), &v) == nil {
			return v
		}
	}
	return text
}

// text is a value as the editor's fields show it.
func text(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case bool:
		return strconv.FormatBool(v)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// ParamRow is one parameter of a stack or an operation, as the editor's fields show it.
type ParamRow struct {
	Name, Type, Title, Default, Minimum, Maximum, Enum, Pattern string
	Required, Secret                                            bool
}

// paramRows lays a parameters schema out as rows, in its order. The schema is read loosely,
// so that a value the check refuses is still shown as it was typed.
func paramRows(raw json.RawMessage) []ParamRow {
	var s struct {
		Properties map[string]map[string]any `json:"properties"`
		Required   []string                  `json:"required"`
		Order      []string                  `json:"x-order"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	names := slices.Clone(s.Order)
	for _, n := range sortedKeys(s.Properties) {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	var out []ParamRow
	for _, n := range names {
		p, ok := s.Properties[n]
		if !ok {
			continue
		}
		r := ParamRow{Name: n, Required: slices.Contains(s.Required, n)}
		r.Type, _ = p["type"].(string)
		r.Title, _ = p["title"].(string)
		r.Pattern, _ = p["pattern"].(string)
		r.Secret, _ = p["x-secret"].(bool)
		r.Default, r.Minimum, r.Maximum = text(p["default"]), text(p["minimum"]), text(p["maximum"])
		if enum, ok := p["enum"].([]any); ok {
			parts := make([]string, len(enum))
			for i, e := range enum {
				parts[i] = text(e)
			}
			r.Enum = strings.Join(parts, ", ")
		}
		out = append(out, r)
	}
	return out
}

// definitionFrom reads the whole draft from the editor's form. inputs names each slot's
// component inputs by type, to read literals as values of the right type. A slot or a
// parameter renamed (its field "was" holds the name it had) takes what names it along.
func definitionFrom(f editorForm, inputType func(slot int, input string) string) Definition {
	def := Definition{Parameters: paramsFrom(f, "p")}
	for i := range f.count("s", "name") {
		prefix := fmt.Sprintf("s.%d.", i)
		s := Slot{Name: f.get(prefix + "name"), Inputs: map[string]Wiring{}}
		s.Component, _ = uuid.Parse(f.get(prefix + "component"))
		s.Version, _ = strconv.Atoi(f.get(prefix + "version"))
		for _, input := range f.all(prefix + "inputs") {
			at := func(k string) string { return prefix + "in." + input + "." + k }
			kind := f.get(at("kind"))
			switch {
			case kind == string(Literal):
				s.Inputs[input] = Wiring{Kind: Literal, Value: typed(f.raw(at("literal")), inputType(i, input))}
			case kind == string(Expression):
				s.Inputs[input] = Wiring{Kind: Expression, Expr: f.raw(at("expr"))}
			case strings.HasPrefix(kind, "param:"):
				s.Inputs[input] = Wiring{Kind: Param, Param: strings.TrimPrefix(kind, "param:")}
			case strings.HasPrefix(kind, "output:"):
				slot, out, _ := strings.Cut(strings.TrimPrefix(kind, "output:"), ".")
				s.Inputs[input] = Wiring{Kind: Output, Slot: slot, Output: out}
			}
		}
		if len(s.Inputs) == 0 {
			s.Inputs = nil
		}
		s.DependsOn = slices.Clone(f.all(prefix + "dep"))
		def.Slots = append(def.Slots, s)
	}
	initial := f.get("m.initial")
	for i := range f.count("m.s", "name") {
		at := func(k string) string { return f.get(fmt.Sprintf("m.s.%d.%s", i, k)) }
		def.Machine.States = append(def.Machine.States, State{Name: at("name"), Initial: initial == strconv.Itoa(i), Terminal: at("terminal") != ""})
	}
	for i := range f.count("m.t", "trigger") {
		prefix := fmt.Sprintf("m.t.%d", i)
		at := func(k string) string { return f.get(prefix + "." + k) }
		def.Machine.Transitions = append(def.Machine.Transitions, Transition{From: at("from"), To: at("to"), Trigger: at("trigger"),
			Timeout: at("timeout"), OnTimeout: at("on_timeout"), Action: actionsFrom(f, prefix+".a")})
	}
	for i := range f.count("o", "name") {
		prefix := fmt.Sprintf("o.%d", i)
		at := func(k string) string { return f.get(prefix + "." + k) }
		op := Operation{Name: at("name"), DisplayName: at("display_name"), Description: at("description"),
			InputSchema: paramsFrom(f, prefix+".p"), RequiredStates: f.all(prefix + ".states"), Actions: actionsFrom(f, prefix+".a"),
			TriggersTransition: at("triggers")}
		op.renameInputs(renamed(f, prefix+".p"))
		def.Operations = append(def.Operations, op)
	}
	for i := range f.count("r", "type") {
		at := func(k string) string { return f.get(fmt.Sprintf("r.%d.%s", i, k)) }
		def.Routes = append(def.Routes, Route{Source: at("source"), Type: at("type"), Filter: f.raw(fmt.Sprintf("r.%d.filter", i)), Trigger: at("trigger")})
	}
	def.renameSlots(renamed(f, "s"))
	def.renameParams(renamed(f, "p"))
	return def
}

// renamed maps the old name of each row under prefix whose name was changed to its new one.
func renamed(f editorForm, prefix string) map[string]string {
	out := map[string]string{}
	for i := range f.count(prefix, "name") {
		at := func(k string) string { return f.get(fmt.Sprintf("%s.%d.%s", prefix, i, k)) }
		if was, now := at("was"), at("name"); was != "" && now != "" && was != now {
			out[was] = now
		}
	}
	return out
}

// actionsFrom reads a list of slot actions; an update keeps the expressions written.
func actionsFrom(f editorForm, prefix string) []Action {
	var out []Action
	for k := range f.count(prefix, "slot") {
		at := fmt.Sprintf("%s.%d.", prefix, k)
		a := Action{Slot: f.get(at + "slot"), Do: Verb(f.get(at + "do"))}
		if a.Do == Update {
			for _, input := range f.all(at + "inputs") {
				if e := f.raw(at + "in." + input); strings.TrimSpace(e) != "" {
					if a.Inputs == nil {
						a.Inputs = map[string]string{}
					}
					a.Inputs[input] = e
				}
			}
		}
		out = append(out, a)
	}
	return out
}

// applyOp does what the pressed button asks to the definition read from the form: op is a
// verb and the positions it applies to, such as "remove-slot:2" or "add-op-action:0".
func applyOp(def *Definition, op string, f editorForm) {
	verb, args, _ := strings.Cut(op, ":")
	var at []int
	for _, a := range strings.Split(args, ":") {
		if n, err := strconv.Atoi(a); err == nil {
			at = append(at, n)
		}
	}
	arg := func(i int) int {
		if i < len(at) {
			return at[i]
		}
		return -1
	}
	switch verb {
	case "add-param":
		def.Parameters = withParam(def.Parameters)
	case "remove-param":
		def.Parameters = withoutParam(def.Parameters, arg(0))
	case "add-slot":
		if s, ok := newSlot(f); ok {
			def.Slots = append(def.Slots, s)
		}
	case "remove-slot":
		def.Slots = remove(def.Slots, arg(0))
	case "up", "down":
		i, j := arg(0), arg(0)+1
		if verb == "up" {
			j = i - 1
		}
		if i >= 0 && j >= 0 && i < len(def.Slots) && j < len(def.Slots) {
			def.Slots[i], def.Slots[j] = def.Slots[j], def.Slots[i]
		}
	case "add-state":
		def.Machine.States = append(def.Machine.States, State{Initial: len(def.Machine.States) == 0})
	case "remove-state":
		def.Machine.States = remove(def.Machine.States, arg(0))
	case "add-transition":
		def.Machine.Transitions = append(def.Machine.Transitions, Transition{})
	case "remove-transition":
		def.Machine.Transitions = remove(def.Machine.Transitions, arg(0))
	case "add-transition-action":
		if t := arg(0); t >= 0 && t < len(def.Machine.Transitions) {
			def.Machine.Transitions[t].Action = append(def.Machine.Transitions[t].Action, Action{Do: Refresh})
		}
	case "remove-transition-action":
		if t := arg(0); t >= 0 && t < len(def.Machine.Transitions) {
			def.Machine.Transitions[t].Action = remove(def.Machine.Transitions[t].Action, arg(1))
		}
	case "add-route":
		def.Routes = append(def.Routes, Route{Type: "alert.firing"})
	case "remove-route":
		def.Routes = remove(def.Routes, arg(0))
	case "add-op":
		def.Operations = append(def.Operations, Operation{InputSchema: json.RawMessage(`{"type":"object","properties":{}}`)})
	case "remove-op":
		def.Operations = remove(def.Operations, arg(0))
	}
	if o := arg(0); strings.HasPrefix(verb, "add-op-") || strings.HasPrefix(verb, "remove-op-") {
		if o < 0 || o >= len(def.Operations) {
			return
		}
		op := &def.Operations[o]
		switch verb {
		case "add-op-param":
			op.InputSchema = withParam(op.InputSchema)
		case "remove-op-param":
			op.InputSchema = withoutParam(op.InputSchema, arg(1))
		case "add-op-action":
			op.Actions = append(op.Actions, Action{Do: Update})
		case "remove-op-action":
			op.Actions = remove(op.Actions, arg(1))
		}
	}
}

// newSlot is the slot the "add a slot" fields ask for: a name and a component version
// chosen as <component ID>@<version>.
func newSlot(f editorForm) (Slot, bool) {
	id, version, ok := strings.Cut(f.get("new_slot.component"), "@")
	if !ok {
		return Slot{}, false
	}
	s := Slot{Name: f.get("new_slot.name")}
	var err error
	if s.Component, err = uuid.Parse(id); err != nil {
		return Slot{}, false
	}
	if s.Version, err = strconv.Atoi(version); err != nil {
		return Slot{}, false
	}
	return s, true
}

func remove[T any](list []T, i int) []T {
	if i < 0 || i >= len(list) {
		return list
	}
	return slices.Delete(list, i, i+1)
}

// withParam adds an empty string parameter, named for the author to rename.
func withParam(raw json.RawMessage) json.RawMessage {
	rows := paramRows(raw)
	name := "param"
	for n := 2; slices.ContainsFunc(rows, func(r ParamRow) bool { return r.Name == name }); n++ {
		name = fmt.Sprintf("param_%d", n)
	}
	return rowsSchema(append(rows, ParamRow{Name: name, Type: "string"}))
}

func withoutParam(raw json.RawMessage, i int) json.RawMessage {
	return rowsSchema(remove(paramRows(raw), i))
}

// rowsSchema writes rows back as a schema, through the same path as the form.
func rowsSchema(rows []ParamRow) json.RawMessage {
	v := url.Values{}
	for i, r := range rows {
		set := func(k, val string) { v.Set(fmt.Sprintf("p.%d.%s", i, k), val) }
		set("name", r.Name)
		set("type", r.Type)
		set("title", r.Title)
		set("default", r.Default)
		set("minimum", r.Minimum)
		set("maximum", r.Maximum)
		set("enum", r.Enum)
		set("pattern", r.Pattern)
		if r.Required {
			set("required", "on")
		}
		if r.Secret {
			set("secret", "on")
		}
	}
	return paramsFrom(editorForm{v}, "p")
}
