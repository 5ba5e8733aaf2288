package stack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"nimbus/app/domain/component"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/web"
	"nimbus/views"
)

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
	names, types    []string
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
		if ref := p.RefersTo; ref != nil {
			// An input naming another deployment is a choice of the slots it may name, each
			// wired to the output whose value names it.
			if known.types[j] == ref.SemanticType && known.outputs[j].Properties[ref.Output] != nil {
				v.Sources = append(v.Sources, views.Option{Value: "output:" + s.Name + "." + ref.Output, Label: "slot " + s.Name + " (" + ref.SemanticType + ")"})
			}
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
		language: make([]string, n), names: make([]string, n), types: make([]string, n), bound: make([]map[string]bool, n)}
	for i, s := range def.Slots {
		comp, err := h.components.Get(ctx, actor, s.Component)
		if err != nil {
			continue
		}
		k.names[i], k.types[i] = comp.Name, comp.SemanticType
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
