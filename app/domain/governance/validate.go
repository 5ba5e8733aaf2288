package governance

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"unicode/utf8"

	"nimbus/app/kernel/problem"
)

// input is what governance needs of one input in a component's published schema: its type
// and the keywords that bound its values. The component package owns the schema; governance
// reads these few keywords itself so that component (whose catalog hides denied components)
// can import governance without an import cycle.
type input struct {
	Type      string   `json:"type"`
	Enum      []any    `json:"enum"`
	Minimum   *float64 `json:"minimum"`
	Maximum   *float64 `json:"maximum"`
	MinLength *int     `json:"minLength"`
	MaxLength *int     `json:"maxLength"`
	Pattern   string   `json:"pattern"`
	// AdditionalProperties makes an object a map of strings, which no constraint applies to.
	AdditionalProperties json.RawMessage `json:"additionalProperties"`
}

// schema is the part of a published input schema that governance reads.
type schema struct {
	Properties map[string]input `json:"properties"`
	Order      []string         `json:"x-order"`
}

// parseSchema reads a published input schema, which was validated when published.
func parseSchema(raw []byte) (schema, error) {
	var s schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return schema{}, fmt.Errorf("read input schema: %w", err)
	}
	if s.Properties == nil {
		s.Properties = map[string]input{}
	}
	return s, nil
}

// names lists the inputs in the order the component's forms show them: x-order, then the rest
// by name.
func (s schema) names() []string {
	var out []string
	for _, n := range s.Order {
		if _, ok := s.Properties[n]; ok && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	for _, n := range sortedKeys(s.Properties) {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// kind names the input's type with its article, in messages: "an integer", "a map of strings".
func (in input) kind() string {
	if in.isMap() {
		return "a map of strings"
	}
	return article(in.Type)
}

func (in input) isMap() bool { return in.Type == "object" && len(in.AdditionalProperties) > 0 }

func (in input) numeric() bool { return in.Type == "integer" || in.Type == "number" }

// scalar reports whether the input takes single values that a list of allowed values can name.
func (in input) scalar() bool { return in.numeric() || in.Type == "string" || in.Type == "boolean" }

// rejects says why the schema would refuse v ("" when it accepts it), in words that follow
// the value: "is not a whole number".
func (in input) rejects(v any) string {
	switch in.Type {
	case "integer", "number":
		f, ok := number(v)
		if !ok {
			return "is not a number"
		}
		if in.Type == "integer" && f != float64(int64(f)) {
			return "is not a whole number"
		}
		if in.Minimum != nil && f < *in.Minimum {
			return "is below the schema's minimum of " + num(*in.Minimum)
		}
		if in.Maximum != nil && f > *in.Maximum {
			return "is above the schema's maximum of " + num(*in.Maximum)
		}
	case "string":
		s, ok := v.(string)
		if !ok {
			return "is not text"
		}
		if in.MinLength != nil && utf8.RuneCountInString(s) < *in.MinLength {
			return fmt.Sprintf("is shorter than the schema's %d characters", *in.MinLength)
		}
		if in.MaxLength != nil && utf8.RuneCountInString(s) > *in.MaxLength {
			return fmt.Sprintf("is longer than the schema's %d characters", *in.MaxLength)
		}
		if in.Pattern != "" {
			if re, err := regexp.Compile(in.Pattern); err == nil && !re.MatchString(s) {
				return "does not match the schema's pattern " + in.Pattern
			}
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return "is not true or false"
		}
	}
	if len(in.Enum) > 0 && !contains(in.Enum, v) {
		return "is not one of the schema's values (" + list(in.Enum) + ")"
	}
	return ""
}

// maxInstancesCap keeps max_instances far inside Postgres's integer.
const maxInstancesCap = 100000

// validate checks a rule about to be saved by scope: every constraint must name an input of
// the schema, apply to its type, stay within what the schema allows and agree with itself. A
// tenant's rule must also stay within ceiling, the provider's rule (nil when it has none).
// It returns the rule normalised for storing: empty constraints dropped, allowed values
// without repeats.
func validate(scope string, r Rule, s schema, ceiling *Rule) (Rule, error) {
	v := &problem.ValidationError{}
	out := Rule{IsAllowed: r.IsAllowed, MaxInstances: r.MaxInstances, Constraints: map[string]Constraint{}}

	if m := r.MaxInstances; m != nil {
		switch {
		case *m < 0:
			v.Add("max_instances", "minimum", "must be 0 or more (0 allows no new deployments); leave it empty for no limit")
		case *m > maxInstancesCap:
			v.Add("max_instances", "maximum", "must be at most %d; leave it empty for no limit", maxInstancesCap)
		}
	}
	if scope == Tenant && ceiling != nil {
		if r.IsAllowed && !ceiling.IsAllowed {
			v.Add("is_allowed", "ceiling", "the provider has denied this component for this tenant, so this tenant cannot allow it")
		}
		if m, c := r.MaxInstances, ceiling.MaxInstances; m != nil && c != nil && *m > *c {
			v.Add("max_instances", "ceiling", "%d is above the provider's limit of %d instances for this tenant; a tenant can only lower it", *m, *c)
		}
	}

	for _, name := range sortedKeys(r.Constraints) {
		c := r.Constraints[name]
		if c.empty() {
			continue
		}
		field := "parameter_constraints." + name
		in, ok := s.Properties[name]
		if !ok {
			v.Add(field, "unknown", "%s is not an input of the component's latest published version", name)
			continue
		}
		c.Allowed = distinct(c.Allowed)
		before := len(v.Fields)
		checkConstraint(field, name, c, in, v)
		if scope == Tenant && ceiling != nil && len(v.Fields) == before {
			if top, ok := ceiling.Constraints[name]; ok {
				checkWithin(field, c, top, v)
			}
		}
		out.Constraints[name] = c
	}
	if err := v.Err(); err != nil {
		return Rule{}, err
	}
	return out, nil
}

// checkConstraint checks one constraint against its input's schema and against itself.
func checkConstraint(field, name string, c Constraint, in input, v *problem.ValidationError) {
	if c.Minimum != nil || c.Maximum != nil {
		if !in.numeric() {
			v.Add(field, "type", "minimum and maximum apply only to integer and number inputs, and %s is %s", name, in.kind())
		} else {
			bound(field+".minimum", "minimum", c.Minimum, in, v)
			bound(field+".maximum", "maximum", c.Maximum, in, v)
			if c.Minimum != nil && c.Maximum != nil && *c.Minimum > *c.Maximum {
				v.Add(field, "range", "the minimum %s is above the maximum %s, so no value could pass", num(*c.Minimum), num(*c.Maximum))
			}
		}
	}
	var re *regexp.Regexp
	if c.Pattern != "" {
		var err error
		switch {
		case in.Type != "string":
			v.Add(field+".pattern", "type", "a pattern applies only to string inputs, and %s is %s", name, in.kind())
		default:
			if re, err = regexp.Compile(c.Pattern); err != nil {
				v.Add(field+".pattern", "pattern", "is not a valid regular expression: %v", err)
			}
		}
	}
	if c.Allowed == nil {
		return
	}
	if !in.scalar() {
		v.Add(field+".allowed", "type", "allowed values apply only to string, integer, number and boolean inputs, and %s is %s", name, in.kind())
		return
	}
	if len(c.Allowed) == 0 {
		v.Add(field+".allowed", "required", "must list at least one value; to forbid the component, deny it instead")
		return
	}
	for _, a := range c.Allowed {
		if msg := in.rejects(a); msg != "" {
			v.Add(field+".allowed", "schema", "%s %s", show(a), msg)
			return
		}
		f, isNum := number(a)
		s, _ := a.(string)
		switch {
		case isNum && c.Minimum != nil && f < *c.Minimum:
			v.Add(field+".allowed", "range", "%s is below the minimum %s given beside it, so it could never be chosen", show(a), num(*c.Minimum))
			return
		case isNum && c.Maximum != nil && f > *c.Maximum:
			v.Add(field+".allowed", "range", "%s is above the maximum %s given beside it, so it could never be chosen", show(a), num(*c.Maximum))
			return
		case re != nil && !re.MatchString(s):
			v.Add(field+".allowed", "range", "%s does not match the pattern %s given beside it, so it could never be chosen", show(a), c.Pattern)
			return
		}
	}
}

// bound checks a minimum or maximum against the schema's own bounds: one outside them would
// either allow what the schema refuses (pointless, and misleading on the form) or refuse
// everything.
func bound(field, rule string, b *float64, in input, v *problem.ValidationError) {
	if b == nil {
		return
	}
	switch {
	case in.Type == "integer" && *b != float64(int64(*b)):
		v.Add(field, "integer", "must be a whole number, since the input is an integer")
	case in.Minimum != nil && *b < *in.Minimum:
		if rule == "minimum" {
			v.Add(field, "schema", "%s is below the schema's own minimum of %s: wider than the schema allows; a constraint can only narrow it", num(*b), num(*in.Minimum))
		} else {
			v.Add(field, "schema", "%s is below the schema's minimum of %s, so no value could pass", num(*b), num(*in.Minimum))
		}
	case in.Maximum != nil && *b > *in.Maximum:
		if rule == "maximum" {
			v.Add(field, "schema", "%s is above the schema's own maximum of %s: wider than the schema allows; a constraint can only narrow it", num(*b), num(*in.Maximum))
		} else {
			v.Add(field, "schema", "%s is above the schema's maximum of %s, so no value could pass", num(*b), num(*in.Maximum))
		}
	}
}

// checkWithin refuses a tenant's constraint that reaches past the provider's for the same
// input. A limit the tenant leaves out is not a widening: the provider's still binds.
func checkWithin(field string, c, top Constraint, v *problem.ValidationError) {
	if c.Minimum != nil && top.Minimum != nil && *c.Minimum < *top.Minimum {
		v.Add(field+".minimum", "ceiling", "%s is below the provider's minimum of %s for this tenant; a tenant can only raise it", num(*c.Minimum), num(*top.Minimum))
	}
	if c.Maximum != nil && top.Maximum != nil && *c.Maximum > *top.Maximum {
		v.Add(field+".maximum", "ceiling", "%s is above the provider's maximum of %s for this tenant; a tenant can only lower it", num(*c.Maximum), num(*top.Maximum))
	}
	if c.Minimum != nil && top.Maximum != nil && *c.Minimum > *top.Maximum {
		v.Add(field+".minimum", "ceiling", "%s is above the provider's maximum of %s for this tenant, so no value could pass", num(*c.Minimum), num(*top.Maximum))
	}
	if c.Maximum != nil && top.Minimum != nil && *c.Maximum < *top.Minimum {
		v.Add(field+".maximum", "ceiling", "%s is below the provider's minimum of %s for this tenant, so no value could pass", num(*c.Maximum), num(*top.Minimum))
	}
	var re *regexp.Regexp
	if top.Pattern != "" {
		re, _ = regexp.Compile(top.Pattern)
	}
	for _, a := range c.Allowed {
		f, isNum := number(a)
		s, _ := a.(string)
		var why string
		switch {
		case top.Allowed != nil && !contains(top.Allowed, a):
			why = fmt.Sprintf("is not among the provider's allowed values (%s) for this tenant", list(top.Allowed))
		case isNum && top.Minimum != nil && f < *top.Minimum:
			why = fmt.Sprintf("is below the provider's minimum of %s for this tenant", num(*top.Minimum))
		case isNum && top.Maximum != nil && f > *top.Maximum:
			why = fmt.Sprintf("is above the provider's maximum of %s for this tenant", num(*top.Maximum))
		case re != nil && !re.MatchString(s):
			why = fmt.Sprintf("does not match the provider's pattern %s for this tenant", top.Pattern)
		}
		if why != "" {
			v.Add(field+".allowed", "ceiling", "%s %s; a tenant can only choose among the values the provider allows", show(a), why)
			return
		}
	}
}

// distinct drops repeated values, keeping the first of each.
func distinct(values []any) []any {
	if values == nil {
		return nil
	}
	out := []any{}
	for _, x := range values {
		if !slices.ContainsFunc(out, func(y any) bool { return same(x, y) }) {
			out = append(out, x)
		}
	}
	return out
}

func article(typ string) string {
	switch typ {
	case "integer", "array", "object":
		return "an " + typ
	case "":
		return "untyped"
	}
	return "a " + typ
}
