// Package paramform lays a component version's input schema out as form fields and reads them
// back as typed parameters: what a landing zone's templates and system services are given.
// Each input is a field named prefix+"p."+input, so several components' inputs share a form;
// its problems are keyed "parameters."+input, as the services name them.
//
// Inputs that the zone's resolvers fill are shown, not asked for; secret inputs are not kept
// in a template at all.
package paramform

import (
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"nimbus/app/component"
	"nimbus/app/problem"
	"nimbus/app/resolver"
	"nimbus/views"
)

// Form is the fields of one component's inputs.
type Form struct {
	Prefix string // of every field's name, such as "mandatory_components[0]."
	Fields []Field
	Error  string // a problem not about one input
}

// Field is one input. Kind is text, number, select, json, resolved (filled by a resolver, shown
// only) or secret (not kept here, shown only).
type Field struct {
	Name, Label, Description, Kind, Value, Error  string
	Options                                       []string
	Min, Max, Step, Pattern, MinLength, MaxLength string
	Placeholder                                   string // the default, said where nothing is given
	Required                                      bool
	Resolver                                      string // the resolver that fills it
	BoundTo                                       string // the resolver that would fill it, were the zone to configure it
}

// Build lays rawSchema out as fields filled with values, errs beside each input. bound maps the
// inputs the component binds to resolvers onto their types, and filled those the zone's
// resolvers fill: a bound input the zone does not fill yet may be left for its resolver.
func Build(prefix string, rawSchema []byte, values map[string]any, errs views.Errors, bound, filled map[string]string) Form {
	f := Form{Prefix: prefix}
	schema := component.ParseSchema("input_schema", rawSchema, &problem.ValidationError{})
	if schema == nil {
		f.Error = "this component's inputs cannot be read"
		return f
	}
	for _, name := range schema.Names() {
		p := schema.Properties[name]
		field := Field{Name: name, Label: p.Title, Description: p.Description, Kind: "text", Error: errs["parameters."+name], Pattern: p.Pattern,
			Required: slices.Contains(schema.Required, name) && p.Default == nil}
		if field.Label == "" {
			field.Label = name
		}
		if v, ok := values[name]; ok && v != nil {
			field.Value = text(v)
		}
		if typ, ok := filled[name]; ok {
			field.Kind, field.Resolver, field.Required, field.Value = "resolved", resolver.Label(typ), false, ""
			f.Fields = append(f.Fields, field)
			continue
		}
		if typ, ok := bound[name]; ok {
			field.Required, field.BoundTo = false, resolver.Label(typ)
		}
		if p.MinLength != nil {
			field.MinLength = strconv.Itoa(*p.MinLength)
		}
		if p.MaxLength != nil {
			field.MaxLength = strconv.Itoa(*p.MaxLength)
		}
		switch {
		case p.Secret:
			field.Kind, field.Required, field.Value = "secret", false, ""
		case len(p.Enum) > 0:
			field.Kind = "select"
			for _, e := range p.Enum {
				field.Options = append(field.Options, text(e))
			}
		case p.Type == "boolean":
			field.Kind, field.Options = "select", []string{"true", "false"}
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
		case p.Type == "array" || p.Type == "object":
			field.Kind = "json"
		}
		if p.Default != nil {
			field.Placeholder = text(p.Default)
		}
		f.Fields = append(f.Fields, field)
	}
	return f
}

// Read takes the inputs of rawSchema from the form fields under prefix, typed by the schema.
// An input left empty is not given: the component's default applies. A value that does not
// parse is refused by its input's name, never with the parser's words.
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
		field := "parameters." + name
		switch {
		case raw == "":
		case p.Type == "boolean":
			out[name] = raw == "true"
		case p.Type == "integer" || p.Type == "number":
			n, err := strconv.ParseFloat(raw, 64)
			if err != nil {
				v.Add(field, "number", "%q is not a number", raw)
				continue
			}
			out[name] = n
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

func example(typ string) string {
	if typ == "array" {
		return `["a", "b"]`
	}
	return `{"key": "value"}`
}

// text is a value as a field holds it: strings as they are, anything else as JSON.
func text(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}
