package stack

import (
	"context"
	"fmt"
	"path"
	"slices"

	"github.com/google/cel-go/cel"

	"nimbus/app/domain/component"
	"nimbus/app/kernel/problem"
)

// Route is a routing rule: an event from a kind of source whose type matches a glob and which
// its filter takes sends Trigger to the instance it names. A version's routes are tried in
// order; the first that takes an event routes it.
type Route struct {
	// Source is the kind of source the event came from (webhook, cloud_provider, nimbus);
	// empty for any but Nimbus's own.
	Source string `json:"source,omitempty"`
	// Type is a glob over the event's type, such as vm.* or alert.firing.
	Type string `json:"type"`
	// Filter is a CEL expression over event (id, source, type, subject, time, data) that must
	// be true for the rule to take the event; empty takes every event of the type.
	Filter  string `json:"filter,omitempty"`
	Trigger string `json:"trigger"`
}

// SourceKinds are the kinds of event sources a route may name.
var SourceKinds = []string{"webhook", "cloud_provider", "nimbus"}

// eventScope is what a route's filter reads: the event, as a map.
var eventScope = Scope{"event": cel.MapType(cel.StringType, cel.DynType)}

// CompileFilter checks a route's filter: CEL over event that gives true or false.
func CompileFilter(text string) (*Expr, error) {
	return Compile(text, eventScope, &component.Property{Type: "boolean"})
}

// Takes reports whether the route takes an event of source kind and type whose fields (as
// CompileFilter's event) are event; a filter that fails on this event (a key it lacks) does
// not take it, and says why.
func (r Route) Takes(ctx context.Context, kind, typ string, event map[string]any) (bool, error) {
	// Nimbus's own events are taken only by rules that name them: a rule for any source
	// taking its instance's own news could move it without end.
	if r.Source != kind && (r.Source != "" || kind == "nimbus") {
		return false, nil
	}
	if ok, err := path.Match(r.Type, typ); err != nil || !ok {
		return false, err
	}
	if r.Filter == "" {
		return true, nil
	}
	f, err := CompileFilter(r.Filter)
	if err != nil {
		return false, err
	}
	v, err := f.Eval(ctx, map[string]any{"event": event})
	if err != nil {
		return false, err
	}
	return v == true, nil
}

func checkRoutes(def Definition, v *problem.ValidationError) {
	for i, r := range def.Routes {
		p := fmt.Sprintf("routes.%d", i)
		if r.Source != "" && !slices.Contains(SourceKinds, r.Source) {
			v.Add(p+".source", "enum", "must be one of webhook, cloud_provider, nimbus, or empty for any")
		}
		if _, err := path.Match(r.Type, ""); r.Type == "" || err != nil {
			v.Add(p+".type", "pattern", "an event type or a glob over one, such as vm.* or alert.firing")
		}
		if r.Filter != "" {
			if _, err := CompileFilter(r.Filter); err != nil {
				v.Add(p+".filter", "expression", "%v", err)
			}
		}
		if !slices.ContainsFunc(def.Machine.Transitions, func(t Transition) bool { return t.Trigger == r.Trigger }) {
			v.Add(p+".trigger", "trigger", "no transition of the state machine has trigger %q", r.Trigger)
		}
	}
}
