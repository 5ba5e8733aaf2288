package stack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"nimbus/app/access"
	"nimbus/app/component"
	"nimbus/app/problem"
	"nimbus/app/web"
	"nimbus/views"
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

// EditorView is the stack editor: the draft laid out as panels, with its problems beside
// what they name.
type EditorView struct {
	Stack       Stack
	DisplayName string
	Description string
	Def         Definition
	Params      []ParamRow
	Slots       []SlotView
	// Choices are the component versions a new slot may pin: <component ID>@<version>.
	Choices  []views.Option
	Machine  []TransitionView
	Ops      []OperationView
	Triggers []string
	Problems []problem.FieldError
	// Refused says why the last save, or publish, was not done; SavedAt when it was saved,
	// Published the version it was published as.
	Refused   string
	SavedAt   string
	Published int
	// Changelog is what a refused publish was asked with, and ChangelogError what was wrong
	// with it.
	Changelog      string
	ChangelogError string
}

// SlotView is one slot: its component, its inputs' wiring and its program.
type SlotView struct {
	Index     int
	Slot      Slot
	Component string
	Versions  []views.Option
	Inputs    []InputView
	Others    []string // the other slots, which it may depend on
	Language  string
	Code      string
}

// InputView is one input of a slot's component and where its value comes from.
type InputView struct {
	Name, Type, Title string
	Required          bool
	// Source is the wiring select's value: "", literal, expr, param:<name>, output:<slot>.<output>.
	Source  string
	Sources []views.Option
	Literal string
	Expr    string
	Enum    []string
}

// TransitionView is one transition of the machine and its actions.
type TransitionView struct {
	Index      int
	Transition Transition
	Actions    []ActionView
}

// OperationView is one day-2 operation with its inputs and actions.
type OperationView struct {
	Index     int
	Operation Operation
	Params    []ParamRow
	Actions   []ActionView
}

// ActionView is one slot action; for an update, an expression per input of the slot.
type ActionView struct {
	Index  int
	Action Action
	Inputs []ActionInput
}

// ActionInput is one input an update may set, and the expression that sets it.
type ActionInput struct{ Name, Type, Expr string }

// slotSchemas are what the editor knows of each slot's pinned component version.
type slotSchemas struct {
	inputs, outputs []*component.Schema
	code, language  []string
	names           []string
	bound           []map[string]bool
}

// EditPage answers GET /stacks/{id}/edit.
func (h *Handlers) EditPage(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	st, err := h.svc.Get(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	if st.Draft == nil {
		return problem.ErrForbidden
	}
	e := EditorView{Stack: st, DisplayName: st.DisplayName, Description: st.Description, Def: *st.Draft, Problems: st.Problems}
	return h.renderEditor(c, http.StatusOK, e)
}

// SaveForm answers POST /stacks/{id}/edit: it reads the whole draft from the editor, does what
// the pressed button asks, saves it and shows the editor again with the draft's problems. A
// draft that cannot be saved is shown as it was typed, with why. The publish button then
// publishes what was saved, as the stack's page does.
func (h *Handlers) SaveForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	ctx, actor := web.Ctx(c), web.Actor(c)
	st, err := h.svc.Get(ctx, actor, id)
	if err != nil {
		return err
	}
	if st.Draft == nil {
		return problem.ErrForbidden
	}
	values, err := c.FormParams()
	if err != nil {
		return err
	}
	f := editorForm{values}
	types := map[int]map[string]string{}
	for i := range f.count("s", "name") {
		types[i] = map[string]string{}
		for _, input := range f.all(fmt.Sprintf("s.%d.inputs", i)) {
			types[i][input] = f.get(fmt.Sprintf("s.%d.in.%s.type", i, input))
		}
	}
	def := definitionFrom(f, func(slot int, input string) string { return types[slot][input] })
	applyOp(&def, f.get("op"), f)
	raw, err := json.Marshal(def)
	if err != nil {
		return err
	}
	e := EditorView{Stack: st, DisplayName: f.get("display_name"), Description: f.raw("description"), Def: def}
	saved, err := h.svc.UpdateDraft(ctx, actor, id, Draft{DisplayName: e.DisplayName, Description: e.Description, Draft: raw})
	if web.FormErrors(err) != nil {
		var v *problem.ValidationError
		errors.As(err, &v)
		e.Problems, e.Refused = v.Fields, "The draft was not saved: fix the problems marked below."
		return h.renderEditor(c, http.StatusUnprocessableEntity, e)
	}
	if err != nil {
		return err
	}
	e.Stack, e.Def, e.Problems = saved, *saved.Draft, saved.Problems
	e.SavedAt = time.Now().UTC().Format("15:04:05 UTC")
	if f.get("op") == "publish" {
		return h.publishDraft(c, e, f.raw("changelog"))
	}
	return h.renderEditor(c, http.StatusOK, e)
}

// publishDraft publishes the draft just saved and shows the editor again: with the version
// published, or with why not (no changelog, or the draft's problems, listed).
func (h *Handlers) publishDraft(c echo.Context, e EditorView, changelog string) error {
	ver, err := h.svc.Publish(web.Ctx(c), web.Actor(c), e.Stack.ID, changelog)
	if errs := web.FormErrors(err); errs != nil {
		e.Changelog, e.ChangelogError, e.SavedAt = changelog, errs["changelog"], ""
		var v *problem.ValidationError
		if errs["changelog"] == "" && errors.As(err, &v) {
			e.Problems = v.Fields // as the publish found them
		}
		if n := len(e.Problems); n > 0 {
			e.Refused = fmt.Sprintf("The draft was saved, not published: fix its %d %s first.", n, views.Plural(n, "problem", "problems"))
		} else {
			e.Refused = "The draft was saved, not published: " + strings.Join(views.Others(errs), "; ") + "."
		}
		return h.renderEditor(c, http.StatusUnprocessableEntity, e)
	}
	if err != nil {
		return err
	}
	st, err := h.svc.Get(web.Ctx(c), web.Actor(c), e.Stack.ID)
	if err != nil {
		return err
	}
	e.Stack, e.Published = st, ver.Version
	return h.renderEditor(c, http.StatusOK, e)
}

// renderEditor lays the draft out: each slot with its component's inputs and program, the
// choices of components, and the machine and operations with the slots' inputs.
func (h *Handlers) renderEditor(c echo.Context, status int, e EditorView) error {
	ctx, actor := web.Ctx(c), web.Actor(c)
	e.Params = paramRows(e.Def.Parameters)
	params := component.ParseSchema("parameters", e.Def.Parameters, &problem.ValidationError{})
	choices, versions, err := h.choices(ctx, actor, e.Stack)
	if err != nil {
		return err
	}
	e.Choices = choices
	known := h.slotSchemas(ctx, actor, e.Def)
	for i, s := range e.Def.Slots {
		sv := SlotView{Index: i, Slot: s, Versions: versions[s.Component], Component: known.names[i],
			Language: known.language[i], Code: known.code[i]}
		if len(sv.Versions) == 0 || !slices.ContainsFunc(sv.Versions, func(o views.Option) bool { return o.Value == strconv.Itoa(s.Version) }) {
			sv.Versions = append(sv.Versions, views.Option{Value: strconv.Itoa(s.Version), Label: "v" + strconv.Itoa(s.Version)})
		}
		for _, o := range e.Def.Slots {
			if o.Name != s.Name {
				sv.Others = append(sv.Others, o.Name)
			}
		}
		if in := known.inputs[i]; in != nil {
			for _, name := range in.Names() {
				sv.Inputs = append(sv.Inputs, inputView(e.Def, known, params, i, name, in))
			}
		}
		e.Slots = append(e.Slots, sv)
	}
	actions := func(list []Action) []ActionView {
		out := make([]ActionView, len(list))
		for k, a := range list {
			out[k] = ActionView{Index: k, Action: a}
			i := slices.IndexFunc(e.Def.Slots, func(s Slot) bool { return s.Name == a.Slot })
			if i < 0 || known.inputs[i] == nil {
				continue
			}
			for _, name := range known.inputs[i].Names() {
				out[k].Inputs = append(out[k].Inputs, ActionInput{Name: name, Type: known.inputs[i].Properties[name].Type, Expr: a.Inputs[name]})
			}
		}
		return out
	}
	for i, t := range e.Def.Machine.Transitions {
		e.Machine = append(e.Machine, TransitionView{Index: i, Transition: t, Actions: actions(t.Action)})
		if t.Trigger != "" && !slices.Contains(e.Triggers, t.Trigger) {
			e.Triggers = append(e.Triggers, t.Trigger)
		}
	}
	for i, op := range e.Def.Operations {
		e.Ops = append(e.Ops, OperationView{Index: i, Operation: op, Params: paramRows(op.InputSchema), Actions: actions(op.Actions)})
	}
	page := web.Page(c, "Edit "+e.Stack.DisplayName).Under(stacksCrumb, views.Crumb{Label: e.Stack.DisplayName, URL: stackURL(e.Stack.ID)})
	return web.Render(c, status, EditorPage(page, e))
}

// inputView lays out one input of slot i with the sources that fit its type.
func inputView(def Definition, known slotSchemas, params *component.Schema, i int, name string, in *component.Schema) InputView {
	p := in.Properties[name]
	v := InputView{Name: name, Type: p.Type, Title: p.Title, Required: slices.Contains(in.Required, name)}
	for _, e := range p.Enum {
		v.Enum = append(v.Enum, text(e))
	}
	v.Sources = []views.Option{{Value: "", Label: defaultWords(p, known.bindings(i, name))},
		{Value: string(Literal), Label: "a value"}, {Value: string(Expression), Label: "an expression"}}
	if params != nil {
		for _, n := range params.Names() {
			if sameType(p, params.Properties[n]) {
				v.Sources = append(v.Sources, views.Option{Value: "param:" + n, Label: "parameter " + n})
			}
		}
	}
	for j, s := range def.Slots {
		if j == i || known.outputs[j] == nil {
			continue
		}
		for _, n := range known.outputs[j].Names() {
			if sameType(p, known.outputs[j].Properties[n]) {
				v.Sources = append(v.Sources, views.Option{Value: "output:" + s.Name + "." + n, Label: "output " + n + " of slot " + s.Name})
			}
		}
	}
	w, wired := def.Slots[i].Inputs[name]
	if !wired {
		return v
	}
	switch w.Kind {
	case Literal:
		v.Source, v.Literal = string(Literal), text(w.Value)
	case Expression:
		v.Source, v.Expr = string(Expression), w.Expr
	case Param:
		v.Source = "param:" + w.Param
	case Output:
		v.Source = "output:" + w.Slot + "." + w.Output
	default:
		v.Source = string(w.Kind)
	}
	if !slices.ContainsFunc(v.Sources, func(o views.Option) bool { return o.Value == v.Source }) {
		// Kept as it was written, for the check beside it to say what is wrong.
		v.Sources = append(v.Sources, views.Option{Value: v.Source, Label: strings.Replace(v.Source, ":", " ", 1) + " (does not fit)"})
	}
	return v
}

// defaultWords says what an input left unwired takes.
func defaultWords(p *component.Property, bound bool) string {
	switch {
	case bound:
		return "its resolver"
	case p.Default != nil:
		return "its default (" + views.Value(p.Default) + ")"
	}
	return "nothing (not wired)"
}

func (k slotSchemas) bindings(i int, input string) bool { return k.bound[i][input] }

// slotSchemas reads each slot's pinned component version, as the viewer may see it; a slot
// whose version the viewer cannot read has none (the check says why).
func (h *Handlers) slotSchemas(ctx context.Context, actor access.Principal, def Definition) slotSchemas {
	n := len(def.Slots)
	k := slotSchemas{inputs: make([]*component.Schema, n), outputs: make([]*component.Schema, n), code: make([]string, n),
		language: make([]string, n), names: make([]string, n), bound: make([]map[string]bool, n)}
	for i, s := range def.Slots {
		comp, err := h.components.Get(ctx, actor, s.Component)
		if err != nil {
			continue
		}
		k.names[i] = comp.Name
		v, err := h.components.Version(ctx, actor, s.Component, s.Version)
		if err != nil {
			continue
		}
		ignore := &problem.ValidationError{}
		k.inputs[i] = component.ParseSchema("input_schema", v.InputSchema, ignore)
		k.outputs[i] = component.ParseSchema("output_schema", v.OutputSchema, ignore)
		k.code[i], k.language[i], k.bound[i] = v.Code, v.Language, boundInputs(v.ResolverBindings)
	}
	return k
}

// choices are the published versions of the components a stack may use: its provider's, and
// for a tenant's stack also the tenant's own; as options to add a slot, and by component.
func (h *Handlers) choices(ctx context.Context, actor access.Principal, st Stack) ([]views.Option, map[uuid.UUID][]views.Option, error) {
	cat, err := h.components.List(ctx, actor, component.Filter{Provider: st.Provider, PublishedOnly: true, PerPage: 100})
	if err != nil {
		return nil, nil, err
	}
	var all []views.Option
	byComponent := map[uuid.UUID][]views.Option{}
	for _, c := range cat.Components {
		if c.TenantName != "" && (st.ProviderLevel() || c.TenantName != st.TenantName) {
			continue
		}
		versions, err := h.components.Versions(ctx, actor, c.ID)
		if err != nil {
			return nil, nil, err
		}
		for _, v := range versions {
			if v.Archived {
				continue
			}
			n := strconv.Itoa(v.Version)
			all = append(all, views.Option{Value: c.ID.String() + "@" + n, Label: c.Name + " v" + n})
			byComponent[c.ID] = append(byComponent[c.ID], views.Option{Value: n, Label: "v" + n})
		}
	}
	return all, byComponent, nil
}
