package component

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"

	"nimbus/app/kernel/problem"
)

// Schema is the subset of JSON Schema that Nimbus renders as a form: an object of named
// properties. Property order is kept in x-order, since JSON objects (and Postgres jsonb) have
// none.
type Schema struct {
	Type       string               `json:"type"`
	Properties map[string]*Property `json:"properties"`
	Required   []string             `json:"required,omitempty"`
	Order      []string             `json:"x-order,omitempty"`
}

// Property is one input or output: a scalar, an enum, an array of scalars, an object of
// scalars, or a map of strings (an object with additionalProperties of type string and no
// properties, such as a namespace's labels), with the constraints the form enforces.
type Property struct {
	Type        string               `json:"type"`
	Title       string               `json:"title,omitempty"`
	Description string               `json:"description,omitempty"`
	Default     any                  `json:"default,omitempty"`
	Enum        []any                `json:"enum,omitempty"`
	Minimum     *float64             `json:"minimum,omitempty"`
	Maximum     *float64             `json:"maximum,omitempty"`
	MinLength   *int                 `json:"minLength,omitempty"`
	MaxLength   *int                 `json:"maxLength,omitempty"`
	Pattern     string               `json:"pattern,omitempty"`
	Items       *Property            `json:"items,omitempty"`
	Properties  map[string]*Property `json:"properties,omitempty"`
	// AdditionalProperties, on an object without properties, makes it a map of strings.
	AdditionalProperties *Property `json:"additionalProperties,omitempty"`
	// ReservedKeys are keys of a map the program sets itself, which a value may not give; one
	// ending in / reserves every key under that prefix.
	ReservedKeys []string `json:"x-reserved-keys,omitempty"`
	Secret       bool     `json:"x-secret,omitempty"`
	// RefersTo, on a string input, says that it names another deployment of the environment
	// by the value of one of its outputs: a machine's network_id names a network.
	RefersTo *Reference `json:"x-refers-to,omitempty"`
}

// Reference is what an input names: a deployment of a semantic type, by an output's value. A
// machine whose input names a network that holds a subnet gets its address from that subnet.
type Reference struct {
	SemanticType string `json:"semantic_type"`
	Output       string `json:"output"`
}

// Bounds of a map of strings, so that one input cannot carry a document.
const (
	MaxMapEntries  = 64
	MaxMapKeyLen   = 253
	MaxMapValueLen = 4096
)

// IsMap reports whether the property is a map of strings.
func (p *Property) IsMap() bool { return p.Type == "object" && p.AdditionalProperties != nil }

var (
	scalarTypes  = map[string]bool{"string": true, "integer": true, "number": true, "boolean": true}
	propertyName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,62}$`)
)

// Titles maps each property that has a title onto it.
func (s *Schema) Titles() map[string]string {
	out := map[string]string{}
	for name, p := range s.Properties {
		if p.Title != "" {
			out[name] = p.Title
		}
	}
	return out
}

// Names returns the property names in display order: x-order first, then the rest sorted.
func (s *Schema) Names() []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range s.Order {
		if _, ok := s.Properties[n]; ok && !seen[n] {
			out, seen[n] = append(out, n), true
		}
	}
	var rest []string
	for n := range s.Properties {
		if !seen[n] {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

// ParseSchema reads raw as a Schema of the subset Nimbus renders, recording every problem
// under field. An empty document is an empty schema.
func ParseSchema(field string, raw []byte, v *problem.ValidationError) *Schema {
	if len(bytes.TrimSpace(raw)) == 0 {
		return &Schema{Type: "object", Properties: map[string]*Property{}}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var s Schema
	if err := dec.Decode(&s); err != nil {
		line, col := jsonPosition(raw, err)
		v.AddAt(field, line, col, "json_schema", "%s", schemaDecodeMessage(err))
		return nil
	}
	if s.Type != "object" {
		v.Add(field, "json_schema", `the schema's "type" must be "object", with the inputs under "properties"`)
	}
	if s.Properties == nil {
		s.Properties = map[string]*Property{}
	}
	for _, name := range s.Names() {
		checkProperty(field, "properties."+name, name, s.Properties[name], false, v)
	}
	for _, r := range s.Required {
		if _, ok := s.Properties[r]; !ok {
			v.Add(field, "json_schema", "required names %q, which is not among the properties", r)
		}
	}
	return &s
}

func checkProperty(field, path, name string, p *Property, nested bool, v *problem.ValidationError) {
	if !propertyName.MatchString(name) {
		v.Add(field, "json_schema", "%s: the name must start with a letter and hold only letters, digits and _ (at most 63)", path)
	}
	if p == nil {
		v.Add(field, "json_schema", "%s: must be an object with a type", path)
		return
	}
	switch {
	case scalarTypes[p.Type]:
	case p.Type == "array" && !nested:
		if p.Items == nil || !scalarTypes[p.Items.Type] {
			v.Add(field, "json_schema", `%s: an array needs "items" with a type of string, integer, number or boolean`, path)
		}
	case p.IsMap() && !nested:
		if len(p.Properties) > 0 {
			v.Add(field, "json_schema", `%s: an object has either "properties" or "additionalProperties", not both`, path)
		}
		if show(p.AdditionalProperties) != `{"type":"string"}` {
			v.Add(field, "json_schema", `%s: "additionalProperties" must be {"type": "string"}: a map's values are strings, with no other keyword`, path)
		}
		if len(p.Enum) > 0 {
			v.Add(field, "json_schema", "%s: a map of strings takes no enum", path)
		}
		for _, k := range p.ReservedKeys {
			if strings.TrimSpace(k) == "" {
				v.Add(field, "json_schema", "%s: x-reserved-keys holds an empty key", path)
			}
		}
	case p.Type == "object" && !nested:
		if len(p.Properties) == 0 {
			v.Add(field, "json_schema", `%s: an object needs "properties"`, path)
		}
		for sub, sp := range p.Properties {
			if sp == nil || !scalarTypes[sp.Type] {
				v.Add(field, "json_schema", "%s.properties.%s: properties of an object must be string, integer, number or boolean", path, sub)
			}
		}
	case nested:
		v.Add(field, "json_schema", "%s: the type must be string, integer, number or boolean", path)
		return
	default:
		v.Add(field, "json_schema", "%s: the type must be string, integer, number, boolean, array or object, not %q", path, p.Type)
		return
	}
	if r := p.RefersTo; r != nil && (p.Type != "string" || nested) {
		v.Add(field, "json_schema", "%s: x-refers-to applies only to an input of type string", path)
	} else if r != nil && (strings.TrimSpace(r.SemanticType) == "" || !propertyName.MatchString(r.Output)) {
		v.Add(field, "json_schema", `%s: x-refers-to must be {"semantic_type": "VirtualNetwork", "output": "network_id"}: the type of deployment it names and the output whose value it holds`, path)
	}
	if len(p.ReservedKeys) > 0 && !p.IsMap() {
		v.Add(field, "json_schema", "%s: x-reserved-keys applies only to a map of strings", path)
	}
	if (p.Minimum != nil || p.Maximum != nil) && p.Type != "integer" && p.Type != "number" {
		v.Add(field, "json_schema", "%s: minimum and maximum apply only to integer and number", path)
	}
	if p.Minimum != nil && p.Maximum != nil && *p.Minimum > *p.Maximum {
		v.Add(field, "json_schema", "%s: minimum is greater than maximum", path)
	}
	if (p.MinLength != nil || p.MaxLength != nil || p.Pattern != "") && p.Type != "string" {
		v.Add(field, "json_schema", "%s: minLength, maxLength and pattern apply only to strings", path)
	}
	if p.Pattern != "" {
		if _, err := regexp.Compile(p.Pattern); err != nil {
			v.Add(field, "json_schema", "%s: pattern is not a valid regular expression: %v", path, err)
		}
	}
	for _, e := range p.Enum {
		if msg := p.check(e, false); msg != "" {
			v.Add(field, "json_schema", "%s: enum value %v %s", path, e, msg)
		}
	}
	if p.Default != nil {
		if msg := p.check(p.Default, true); msg != "" {
			v.Add(field, "json_schema", "%s: the default %v %s", path, p.Default, msg)
		}
	}
}

// check says why value does not fit the property ("" when it does); withRules also applies
// the enum, bounds, lengths and pattern.
func (p *Property) check(value any, withRules bool) string {
	switch p.Type {
	case "string":
		s, ok := value.(string)
		if !ok {
			return "is not a string"
		}
		if !withRules {
			return ""
		}
		if p.MinLength != nil && len([]rune(s)) < *p.MinLength {
			return fmt.Sprintf("is shorter than %d characters", *p.MinLength)
		}
		if p.MaxLength != nil && len([]rune(s)) > *p.MaxLength {
			return fmt.Sprintf("is longer than %d characters", *p.MaxLength)
		}
		if p.Pattern != "" {
			if re, err := regexp.Compile(p.Pattern); err == nil && !re.MatchString(s) {
				return fmt.Sprintf("does not match the pattern %s", p.Pattern)
			}
		}
	case "integer", "number":
		f, ok := value.(float64)
		if !ok {
			return "is not a number"
		}
		if p.Type == "integer" && f != float64(int64(f)) {
			return "is not a whole number"
		}
		if withRules && p.Minimum != nil && f < *p.Minimum {
			return fmt.Sprintf("is below the minimum %v", *p.Minimum)
		}
		if withRules && p.Maximum != nil && f > *p.Maximum {
			return fmt.Sprintf("is above the maximum %v", *p.Maximum)
		}
	case "boolean":
		if _, ok := value.(bool); !ok {
			return "is not true or false"
		}
	case "array":
		items, ok := value.([]any)
		if !ok {
			return "is not a list"
		}
		if p.Items != nil {
			for _, it := range items {
				if msg := p.Items.check(it, withRules); msg != "" {
					return "has an item that " + msg
				}
			}
		}
		return ""
	case "object":
		m, ok := value.(map[string]any)
		if !ok {
			return "is not an object"
		}
		if p.IsMap() {
			if problems := p.mapProblems(m); len(problems) > 0 {
				if k := problems[0].key; k != "" {
					return fmt.Sprintf("at key %q: %s", k, problems[0].message)
				}
				return problems[0].message
			}
		}
		return ""
	}
	if withRules && len(p.Enum) > 0 {
		for _, e := range p.Enum {
			if e == value {
				return ""
			}
		}
		return "is not one of the allowed values"
	}
	return ""
}

// mapProblem is one thing wrong with a map of strings: at key, or with the whole map when key
// is "".
type mapProblem struct{ key, message string }

// mapProblems lists what is wrong with a value given for a map of strings, keys in order.
func (p *Property) mapProblems(m map[string]any) []mapProblem {
	var out []mapProblem
	if len(m) > MaxMapEntries {
		out = append(out, mapProblem{"", fmt.Sprintf("has %d entries; a map holds at most %d", len(m), MaxMapEntries)})
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		switch s, ok := m[k].(string); {
		case strings.TrimSpace(k) == "":
			out = append(out, mapProblem{"", "has an empty key; every key must be a non-empty string"})
		case len(k) > MaxMapKeyLen:
			out = append(out, mapProblem{k, fmt.Sprintf("the key is longer than %d characters", MaxMapKeyLen)})
		case p.reserved(k):
			out = append(out, mapProblem{k, "is a key the component sets itself; choose another"})
		case !ok:
			out = append(out, mapProblem{k, fmt.Sprintf("%s is not a string; a map's values are strings (quote numbers and true or false)", show(m[k]))})
		case len(s) > MaxMapValueLen:
			out = append(out, mapProblem{k, fmt.Sprintf("is longer than %d characters", MaxMapValueLen)})
		}
	}
	return out
}

// reserved reports whether key is among the map's reserved keys, or under a reserved prefix.
func (p *Property) reserved(key string) bool {
	for _, r := range p.ReservedKeys {
		if key == r || strings.HasSuffix(r, "/") && strings.HasPrefix(key, r) {
			return true
		}
	}
	return false
}

// show is a value as JSON writes it, for messages.
func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// Apply checks parameters against the schema and returns them completed with defaults: every
// required input given, no unknown input, each value of its type and within its rules. Each
// problem names the input under field ("parameters.cores").
func (s *Schema) Apply(field string, params map[string]any, v *problem.ValidationError) map[string]any {
	out := map[string]any{}
	for name := range params {
		if _, ok := s.Properties[name]; !ok {
			v.Add(field+"."+name, "unknown", "is not an input of this component")
		}
	}
	for _, name := range s.Names() {
		p := s.Properties[name]
		value, given := params[name]
		if !given || value == nil {
			switch {
			case p.Default != nil:
				out[name] = p.Default
			case slices.Contains(s.Required, name):
				v.Add(field+"."+name, "required", "is required")
			}
			continue
		}
		if p.report(field+"."+name, value, v) {
			out[name] = value
		}
	}
	return out
}

// CheckAt records what is wrong with value for the named input under field ("parameters.cores"),
// each bad entry of a map under its key ("parameters.labels.team"); false when something is.
func (s *Schema) CheckAt(field, name string, value any, v *problem.ValidationError) bool {
	p, ok := s.Properties[name]
	if !ok {
		v.Add(field, "unknown", "is not an input of this component")
		return false
	}
	if value == nil {
		v.Add(field, "schema", "is empty")
		return false
	}
	return p.report(field, value, v)
}

// report records under field what is wrong with value; false when something is.
func (p *Property) report(field string, value any, v *problem.ValidationError) bool {
	if m, ok := value.(map[string]any); ok && p.IsMap() {
		problems := p.mapProblems(m)
		for _, pr := range problems {
			if pr.key == "" {
				v.Add(field, "map", "%s", pr.message)
			} else {
				v.Add(field+"."+pr.key, "map", "%s", pr.message)
			}
		}
		return len(problems) == 0
	}
	if msg := p.check(value, true); msg != "" {
		v.Add(field, "schema", "%v %s", value, msg)
		return false
	}
	return true
}

// Check reports what is wrong with value for the named input, or "" when nothing is.
func (s *Schema) Check(name string, value any) string {
	p, ok := s.Properties[name]
	if !ok {
		return "is not an input of this component"
	}
	if value == nil {
		return "is empty"
	}
	return p.check(value, true)
}

// Without returns the schema without the named input, such as one a resolver fills.
func (s *Schema) Without(name string) *Schema {
	out := *s
	out.Properties = maps.Clone(s.Properties)
	delete(out.Properties, name)
	out.Required = slices.DeleteFunc(slices.Clone(s.Required), func(r string) bool { return r == name })
	return &out
}

// Secret reports whether the input is marked x-secret.
func (s *Schema) Secret(name string) bool {
	p, ok := s.Properties[name]
	return ok && p.Secret
}
