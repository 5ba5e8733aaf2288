// Package paramform lays a component version's input schema out as form fields and reads them
// back as typed parameters: the deploy dialog's and the deployment page's inputs, and what a
// landing zone's templates and system services are given. Each input is a field named
// prefix+"p."+input, so several components' inputs share a form; its problems are keyed
// "parameters."+input, as the services name them.
//
// Layout is what every form shares; how secrets, booleans, defaults and resolvers show is the
// caller's: Build does it for a landing zone, where inputs that the zone's resolvers fill are
// shown, not asked for, and secret inputs are not kept at all.
package paramform

import (
	"encoding/json"
	"maps"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"nimbus/app/domain/component"
	"nimbus/app/domain/resolver"
	"nimbus/app/kernel/problem"
	"nimbus/views"
)

// Form is the fields of one component's inputs.
type Form struct {
	Prefix string // of every field's name, such as "mandatory_components[0]."
	Fields []Field
	Error  string // a problem not about one input
	Empty  string // what the form says when the component has no inputs
	// Follows says the form's environment may change in the page: a field BoundTo a resolver
	// is then marked for the page's script, which shows it read-only while the environment
	// chosen configures that resolver.
	Follows bool
}

// Field is one input. Layout gives it a Kind of text, number, select, json, map, boolean or
// secret (a map of strings is a textarea of key=value lines);
// callers make booleans and secrets what they ask for (a select, a checkbox, a password, a
// field shown only), and a field that a resolver fills "resolved": shown, not asked for.
type Field struct {
	Name, Label, Description, Kind, Value, Error  string
	Key                                           string // shown beside the label, where the title could be taken for another field
	Options                                       []string
	Blank                                         string // the label of a select's empty choice; none offered when empty
	Min, Max, Step, Pattern, MinLength, MaxLength string
	Placeholder                                   string
	Default                                       string // the schema's default as the field holds it, when HasDefault
	HasDefault                                    bool
	Required, Checked                             bool
	Note                                          string // what a field shown only says of itself
	Resolver                                      string // the type of the resolver that fills it
	BoundTo                                       string // the type of the resolver bound to it, which may fill it
	BoundNote                                     string // what the field says of BoundTo
	FilledBy                                      string // the words for BoundTo filling it, where the form Follows
	Resolved                                      bool   // BoundTo fills it in the environment chosen
	Limits                                        string // the tenant's governance on it, in words
	// Refers is what the input names (x-refers-to): another deployment, by an output's value.
	// Suggestions are the values it may take, offered beside the field.
	Refers      *component.Reference
	Suggestions []Suggestion
}

// Suggestion is a value a field may take, with what it is in words: a network's ID, said as
// "core-net in dev".
type Suggestion struct{ Value, Label string }

// Layout lays rawSchema out as fields filled with the given values, errs beside each input;
// false when the schema cannot be read.
func Layout(prefix string, rawSchema []byte, values map[string]any, errs views.Errors) (Form, bool) {
	f := Form{Prefix: prefix}
	schema := component.ParseSchema("input_schema", rawSchema, &problem.ValidationError{})
	if schema == nil {
		return f, false
	}
	for _, name := range schema.Names() {
		p := schema.Properties[name]
		field := Field{Name: name, Label: p.Title, Description: p.Description, Kind: "text", Error: errs["parameters."+name], Pattern: p.Pattern,
			Required: slices.Contains(schema.Required, name) && p.Default == nil, HasDefault: p.Default != nil, Refers: p.RefersTo}
		if field.Label == "" {
			field.Label = name
		}
		text := Text
		if p.IsMap() {
			text = mapText
		}
		if v, ok := values[name]; ok && v != nil {
			field.Value = text(v)
		}
		if p.Default != nil {
			field.Default = text(p.Default)
		}
		if p.MinLength != nil {
			field.MinLength = strconv.Itoa(*p.MinLength)
		}
		if p.MaxLength != nil {
			field.MaxLength = strconv.Itoa(*p.MaxLength)
		}
		switch {
		case p.Secret:
			field.Kind = "secret"
		case len(p.Enum) > 0:
			field.Kind = "select"
			for _, e := range p.Enum {
				field.Options = append(field.Options, Text(e))
			}
		case p.Type == "boolean":
			field.Kind = "boolean"
		case p.Type == "integer" || p.Type == "number":
			field.Kind, field.Step = "number", "1"
			if p.Type == "number" {
				field.Step = "any"
			}
			if p.Minimum != nil {
				field.Min = strconv.FormatFloat(*p.Minimum, 'f', -1, 64)
			}
			if p.Maximum != nil {
				field.Max = strconv.FormatFloat(*p.Maximum, 'f', -1, 64)
			}
		case p.IsMap():
			field.Kind = "map"
		case p.Type == "array" || p.Type == "object":
			field.Kind = "json"
		}
		f.Fields = append(f.Fields, field)
	}
	return f, true
}

// Build lays rawSchema out for a landing zone: booleans are a choice of true or false, a
// default is said where nothing is given, secrets are only shown. bound maps the inputs the
// component binds to resolvers onto their types, and filled those the zone's resolvers fill:
// a bound input the zone does not fill yet may be left for its resolver.
func Build(prefix string, rawSchema []byte, values map[string]any, errs views.Errors, bound, filled map[string]string) Form {
	f, ok := Layout(prefix, rawSchema, values, errs)
	if !ok {
		f.Error = "this component's inputs cannot be read"
		return f
	}
	for i := range f.Fields {
		field := &f.Fields[i]
		if typ, ok := filled[field.Name]; ok {
			field.Kind, field.Resolver, field.Required, field.Value = "resolved", typ, false, ""
			field.Placeholder = "filled by a resolver"
			field.Note = "Filled by the " + resolver.Label(typ) + " resolver of this landing zone when each environment deploys it."
			continue
		}
		if typ, ok := bound[field.Name]; ok {
			field.Required, field.BoundTo = false, typ
			field.BoundNote = "Leave it empty for the " + resolver.Label(typ) + " resolver to fill: configure that resolver on this landing zone before publishing it."
		}
		field.Placeholder = field.Default
		switch field.Kind {
		case "secret":
			field.Required, field.Value, field.Placeholder = false, "", "secret"
			field.Note = "A secret input: bind it to the secret provisioner rather than keep its value here."
		case "boolean":
			field.Kind, field.Options = "select", []string{"true", "false"}
		}
		// A choice that is empty already stands for "nothing given": a blank beside it would
		// be a second choice of the same, both selected.
		if field.Kind == "select" && !field.Required && !slices.Contains(field.Options, "") {
			field.Blank = "—"
			if field.Default != "" {
				field.Blank = "default: " + field.Default
			}
		}
	}
	return f
}

// Fill sets the fields under prefix to values, as the form holds them: the inverse of Read.
func Fill(form url.Values, prefix string, rawSchema []byte, values map[string]any) {
	schema := component.ParseSchema("input_schema", rawSchema, &problem.ValidationError{})
	for k, v := range values {
		if schema != nil && schema.Properties[k] != nil && schema.Properties[k].IsMap() {
			form.Set(prefix+"p."+k, mapText(v))
		} else {
			form.Set(prefix+"p."+k, Text(v))
		}
	}
}

// Given is what was typed into the form's fields under prefix, by input, to fill them again.
func Given(form url.Values, prefix string) map[string]any {
	out := map[string]any{}
	for k := range form {
		if input, ok := strings.CutPrefix(k, prefix+"p."); ok {
			out[input] = form.Get(k)
		}
	}
	return out
}

// Read takes the inputs of rawSchema from the form fields under prefix, typed by the schema.
// An input left empty is not given: its current value or the component's default applies. A
// secret is exactly what was typed. A value that does not parse is refused by its input's
// name, never with the parser's words.
func Read(form url.Values, prefix string, rawSchema []byte) (map[string]any, error) {
	v := &problem.ValidationError{}
	schema := component.ParseSchema("input_schema", rawSchema, v)
	if schema == nil {
		return nil, v.Err()
	}
	out := map[string]any{}
	for _, name := range schema.Names() {
		p := schema.Properties[name]
		raw := strings.TrimSpace(form.Get(prefix + "p." + name))
		if p.Secret && raw != "" {
			raw = form.Get(prefix + "p." + name)
		}
		field := "parameters." + name
		switch {
		case raw == "":
		case p.Type == "boolean":
			out[name] = raw == "true"
		case p.Type == "integer" || p.Type == "number":
			// ParseFloat also reads NaN and Inf, which no bound rules out and no JSON holds.
			n, err := strconv.ParseFloat(raw, 64)
			if err != nil || math.IsNaN(n) || math.IsInf(n, 0) {
				v.Add(field, "number", "%q is not a number", raw)
				continue
			}
			out[name] = n
		case p.IsMap():
			m, ok := readMap(field, raw, v)
			if !ok {
				continue
			}
			out[name] = m
		case p.Type == "array" || p.Type == "object":
			var val any
			if err := json.Unmarshal([]byte(raw), &val); err != nil {
				v.Add(field, "json", "must be written as JSON, such as %s", example(p.Type))
				continue
			}
			out[name] = val
		default:
			out[name] = raw
		}
	}
	return out, v.Err()
}

// readMap reads a map of strings written one key=value a line; blank lines are skipped and the
// value is everything after the first =, so it may hold one itself. Problems name the line.
func readMap(field, raw string, v *problem.ValidationError) (map[string]any, bool) {
	out := map[string]any{}
	before := len(v.Fields)
	for i, line := range strings.Split(raw, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		key = strings.TrimSpace(key)
		switch _, seen := out[key]; {
		case !ok:
			v.Add(field, "map", "line %d: write key=value, such as team=blue", i+1)
		case key == "":
			v.Add(field, "map", "line %d: the key before = is empty", i+1)
		case seen:
			v.Add(field, "map", "line %d: %s is given twice", i+1, key)
		default:
			out[key] = strings.TrimSpace(value)
		}
	}
	return out, len(v.Fields) == before
}

// mapText writes a map one key=value a line, keys in order: how the form takes it back.
func mapText(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return Text(v)
	}
	lines := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		lines = append(lines, k+"="+Text(m[k]))
	}
	return strings.Join(lines, "\n")
}

func example(typ string) string {
	if typ == "array" {
		return `["a", "b"]`
	}
	return `{"key": "value"}`
}

// Text is a value as a form field holds it: strings as they are, anything else as JSON.
func Text(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}
