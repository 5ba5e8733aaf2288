package governance

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"nimbus/app/kernel/problem"
)

// Who set a rule. A (component, tenant) pair has at most one rule of each.
const (
	// Provider is the provider admins' rule: the ceiling for the tenant.
	Provider = "provider"
	// Tenant is the tenant admins' own rule, which may only narrow the provider's.
	Tenant = "tenant"
	// Both marks a limit that neither rule sets alone, such as the intersection of two lists
	// of allowed values that share only some values.
	Both = "both"
)

// Constraint narrows the values one input may take; unset fields do not constrain.
type Constraint struct {
	Minimum *float64 `json:"minimum,omitempty"`
	Maximum *float64 `json:"maximum,omitempty"`
	Allowed []any    `json:"allowed,omitempty"`
	Pattern string   `json:"pattern,omitempty"`
}

func (c Constraint) empty() bool {
	return c.Minimum == nil && c.Maximum == nil && c.Allowed == nil && c.Pattern == ""
}

// Rule is what one scope set for a component in a tenant.
type Rule struct {
	IsAllowed    bool                  `json:"is_allowed"`
	Constraints  map[string]Constraint `json:"parameter_constraints"`
	MaxInstances *int                  `json:"max_instances"` // nil: no limit
	UpdatedBy    string                `json:"updated_by,omitempty"`
	UpdatedAt    *time.Time            `json:"updated_at,omitempty"`
}

// Bound is a minimum or maximum and who set it.
type Bound struct {
	Value float64 `json:"value"`
	SetBy string  `json:"set_by"`
}

// Choice is the values an input may take and who set them.
type Choice struct {
	Values []any  `json:"values"`
	SetBy  string `json:"set_by"`
}

// Match is a pattern a value must match and who set it.
type Match struct {
	Pattern string `json:"pattern"`
	SetBy   string `json:"set_by"`
}

// Limits is what binds one input once both rules are applied.
type Limits struct {
	Minimum  *Bound  `json:"minimum,omitempty"`
	Maximum  *Bound  `json:"maximum,omitempty"`
	Allowed  *Choice `json:"allowed,omitempty"`
	Patterns []Match `json:"patterns,omitempty"` // a value must match every one
}

// Count is an instance limit and who set it.
type Count struct {
	Value int    `json:"value"`
	SetBy string `json:"set_by"`
}

// EffectiveRule is the intersection of the provider's rule and the tenant's: what actually
// binds the tenant's deployments of a component. Each limit says who set it, so a refusal can
// name them.
type EffectiveRule struct {
	IsAllowed    bool              `json:"is_allowed"`
	DeniedBy     string            `json:"denied_by,omitempty"`
	Parameters   map[string]Limits `json:"parameters"`
	MaxInstances *Count            `json:"max_instances"` // nil: no limit
}

// Intersect combines the provider's and the tenant's rule, either of which may be nil (not
// set). With neither, everything is allowed without limit. Where both set the same limit, the
// narrower wins; on a tie the provider is named, since its rule would bind anyway.
func Intersect(provider, tenant *Rule) EffectiveRule {
	e := EffectiveRule{IsAllowed: true, Parameters: map[string]Limits{}}
	for _, r := range []struct {
		scope string
		rule  *Rule
	}{{Provider, provider}, {Tenant, tenant}} {
		if r.rule == nil {
			continue
		}
		if !r.rule.IsAllowed && e.IsAllowed {
			e.IsAllowed, e.DeniedBy = false, r.scope
		}
		if m := r.rule.MaxInstances; m != nil && (e.MaxInstances == nil || *m < e.MaxInstances.Value) {
			e.MaxInstances = &Count{Value: *m, SetBy: r.scope}
		}
		for name, c := range r.rule.Constraints {
			e.Parameters[name] = narrow(e.Parameters[name], c, r.scope)
		}
	}
	return e
}

// narrow applies one scope's constraint to the limits so far.
func narrow(l Limits, c Constraint, scope string) Limits {
	if c.Minimum != nil && (l.Minimum == nil || *c.Minimum > l.Minimum.Value) {
		l.Minimum = &Bound{Value: *c.Minimum, SetBy: scope}
	}
	if c.Maximum != nil && (l.Maximum == nil || *c.Maximum < l.Maximum.Value) {
		l.Maximum = &Bound{Value: *c.Maximum, SetBy: scope}
	}
	if c.Allowed != nil {
		switch {
		case l.Allowed == nil:
			l.Allowed = &Choice{Values: slices.Clone(c.Allowed), SetBy: scope}
		default:
			both := []any{}
			for _, v := range l.Allowed.Values {
				if contains(c.Allowed, v) {
					both = append(both, v)
				}
			}
			setBy := l.Allowed.SetBy
			if len(both) != len(l.Allowed.Values) {
				setBy = Both
				if len(both) == len(c.Allowed) {
					setBy = scope
				}
			}
			l.Allowed = &Choice{Values: both, SetBy: setBy}
		}
	}
	if c.Pattern != "" {
		l.Patterns = append(l.Patterns, Match{Pattern: c.Pattern, SetBy: scope})
	}
	return l
}

// by says who set a limit, for messages: "… set by the provider for this tenant".
func by(setBy string) string {
	switch setBy {
	case Provider:
		return "the provider for this tenant"
	case Tenant:
		return "this tenant's admins"
	}
	return "the provider and this tenant's admins together"
}

// Check refuses parameters the rule does not allow: a *problem.Denied when the component is
// denied, otherwise a *problem.ValidationError naming each parameter ("parameters.cores") with
// the rule it broke and who set it. Parameters the rule does not mention, and those absent,
// pass; the input schema is checked elsewhere.
func (e EffectiveRule) Check(params map[string]any) error {
	if !e.IsAllowed {
		return &problem.Denied{Message: "this component is not allowed for this tenant: denied by " + by(e.DeniedBy)}
	}
	v := &problem.ValidationError{}
	for _, name := range sortedKeys(e.Parameters) {
		value, ok := params[name]
		if !ok || value == nil {
			continue
		}
		l, field := e.Parameters[name], "parameters."+name
		if l.Minimum != nil || l.Maximum != nil {
			f, ok := number(value)
			switch {
			case !ok:
				v.Add(field, "type", "%s is not a number", show(value))
			case l.Minimum != nil && f < l.Minimum.Value:
				v.Add(field, "minimum", "%s is below the minimum of %s set by %s", show(value), num(l.Minimum.Value), by(l.Minimum.SetBy))
			case l.Maximum != nil && f > l.Maximum.Value:
				v.Add(field, "maximum", "%s is above the maximum of %s set by %s", show(value), num(l.Maximum.Value), by(l.Maximum.SetBy))
			}
		}
		if l.Allowed != nil && !contains(l.Allowed.Values, value) {
			if len(l.Allowed.Values) == 0 {
				v.Add(field, "allowed", "no value is allowed: the values allowed by the provider and by this tenant's admins do not overlap")
			} else {
				v.Add(field, "allowed", "%s is not one of the allowed values (%s) set by %s", show(value), list(l.Allowed.Values), by(l.Allowed.SetBy))
			}
		}
		for _, m := range l.Patterns {
			s, ok := value.(string)
			re, err := regexp.Compile(m.Pattern)
			if err != nil {
				continue // refused when it was set; a stored one that no longer compiles binds nothing
			}
			if !ok || !re.MatchString(s) {
				v.Add(field, "pattern", "%s does not match the pattern %s set by %s", show(value), m.Pattern, by(m.SetBy))
			}
		}
	}
	return v.Err()
}

// checkInstances refuses one more deployment when live ones have reached the limit.
func (e EffectiveRule) checkInstances(live int) error {
	if e.MaxInstances == nil || live < e.MaxInstances.Value {
		return nil
	}
	return problem.Invalid("max_instances", "max_instances",
		"this tenant already has %d of this component deployed, and at most %d are allowed (set by %s); destroy one before deploying another",
		live, e.MaxInstances.Value, by(e.MaxInstances.SetBy))
}

// Describe lists the rule in plain words, one limit a line, such as
// "cores: at most 4 (set by the provider for this tenant)".
func (e EffectiveRule) Describe() []string {
	var out []string
	if !e.IsAllowed {
		out = append(out, "denied (by "+by(e.DeniedBy)+")")
	}
	if e.MaxInstances != nil {
		out = append(out, fmt.Sprintf("at most %d instances (set by %s)", e.MaxInstances.Value, by(e.MaxInstances.SetBy)))
	}
	for _, name := range sortedKeys(e.Parameters) {
		l := e.Parameters[name]
		if l.Minimum != nil {
			out = append(out, fmt.Sprintf("%s: at least %s (set by %s)", name, num(l.Minimum.Value), by(l.Minimum.SetBy)))
		}
		if l.Maximum != nil {
			out = append(out, fmt.Sprintf("%s: at most %s (set by %s)", name, num(l.Maximum.Value), by(l.Maximum.SetBy)))
		}
		if l.Allowed != nil {
			out = append(out, fmt.Sprintf("%s: one of %s (set by %s)", name, list(l.Allowed.Values), by(l.Allowed.SetBy)))
		}
		for _, m := range l.Patterns {
			out = append(out, fmt.Sprintf("%s: matches %s (set by %s)", name, m.Pattern, by(m.SetBy)))
		}
	}
	return out
}

// number reads a parameter as a number: JSON gives float64, Go callers may pass integers.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case int64:
		return float64(n), true
	}
	return 0, false
}

// same compares two values as JSON would, so that 4 and 4.0 are one number. Lists and
// objects, which == would panic on, are compared in depth.
func same(a, b any) bool {
	fa, okA := number(a)
	fb, okB := number(b)
	if okA || okB {
		return okA && okB && fa == fb
	}
	switch a.(type) {
	case string, bool, nil:
		return a == b
	}
	return reflect.DeepEqual(a, b)
}

func contains(list []any, v any) bool {
	return slices.ContainsFunc(list, func(x any) bool { return same(x, v) })
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// show writes a value as a user typed it: numbers plainly, text quoted.
func show(v any) string {
	if f, ok := number(v); ok {
		return num(f)
	}
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}

func list(values []any) string {
	parts := make([]string, len(values))
	for i, v := range values {
		parts[i] = show(v)
	}
	return strings.Join(parts, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
