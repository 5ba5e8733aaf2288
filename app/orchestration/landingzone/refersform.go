package landingzone

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"nimbus/views"
)

// ReferField is an input of a template's member that names another deployment (x-refers-to):
// a choice of the members before it whose component is of the semantic type it names.
type ReferField struct {
	Input, Label string
	Type, Output string // what the input names: a deployment of Type, by its output Output
	Value, Error string
	Options      []views.Option
}

// referFields lays out, for each input of row that names another deployment, the rows before
// it whose component is of the semantic type the input names. types and labels are the
// components' semantic types and names, by ID.
func referFields(row *MemberForm, before []MemberForm, types, labels map[string]string) {
	row.Refers = nil
	for _, f := range row.Inputs.Fields {
		if f.Refers == nil {
			continue
		}
		rf := ReferField{Input: f.Name, Label: f.Label, Type: f.Refers.SemanticType, Output: f.Refers.Output,
			Value: row.Chosen[f.Name], Error: row.Errors["refers."+f.Name]}
		for _, b := range before {
			if name := strings.TrimSpace(b.Name); name != "" && types[b.Component] == f.Refers.SemanticType {
				rf.Options = append(rf.Options, views.Option{Value: name, Label: name + " (" + labels[b.Component] + ")"})
			}
		}
		if rf.Value != "" && !slices.ContainsFunc(rf.Options, func(o views.Option) bool { return o.Value == rf.Value }) {
			// Kept as it was chosen, for the problem beside it to say what is wrong.
			rf.Options = append(rf.Options, views.Option{Value: rf.Value, Label: rf.Value + " (does not fit)"})
		}
		row.Refers = append(row.Refers, rf)
	}
}

// chosenRefers reads what a form row's refers fields chose, by input; a field left on its
// empty choice chooses nothing.
func chosenRefers(values url.Values, prefix string) map[string]string {
	out := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(values)) {
		if input, ok := strings.CutPrefix(k, prefix+"refers."); ok {
			if v := strings.TrimSpace(values.Get(k)); v != "" {
				out[input] = v
			}
		}
	}
	return out
}

// rowsBefore are the rows of a template form before the one under prefix, as the form holds
// them now: what the row's refers may name while it is being filled in.
func rowsBefore(values url.Values, prefix string) []MemberForm {
	n, ok := rowIndex(prefix)
	if !ok {
		return nil
	}
	out := make([]MemberForm, 0, n)
	for i := range min(n, templateRows) {
		out = append(out, MemberForm{Component: values.Get(rowField(i, "component_id")), Name: values.Get(rowField(i, "name"))})
	}
	return out
}

// rowIndex is the place of the template form's row whose fields are named under prefix; not
// ok for the system-service form, whose fields have none.
func rowIndex(prefix string) (int, bool) {
	var n int
	_, err := fmt.Sscanf(prefix, "mandatory_components[%d].", &n)
	return n, err == nil && n >= 0
}

// serviceRows are a zone's system services as the rows before a new one: what its refers may
// name, since a zone's system services are deployed in the order they were added.
func serviceRows(services []Member) []MemberForm {
	out := make([]MemberForm, len(services))
	for i, m := range services {
		out[i] = MemberForm{Component: m.ComponentID.String(), Name: m.Name}
	}
	return out
}

// refersID is the id of the block holding a form row's refers, for the rows after a changed
// one to be sent in its place.
func refersID(prefix string) string {
	if prefix == "" {
		return "refers-service"
	}
	return "refers-" + prefix
}

// refersValues are a member's refers as its table shows them, beside its parameters.
func refersValues(refers map[string]string) []views.KeyValue {
	out := make([]views.KeyValue, 0, len(refers))
	for _, input := range slices.Sorted(maps.Keys(refers)) {
		out = append(out, views.KeyValue{Key: input, Value: "output of " + refers[input]})
	}
	return out
}
