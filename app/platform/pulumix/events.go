package pulumix

import (
	"slices"
	"strings"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
)

// ResourceStatus is where the engine's step on one resource stands.
type ResourceStatus string

// The statuses of a resource's step: planned by a preview, running, done or failed.
const (
	ResourcePlanned ResourceStatus = "planned"
	ResourceRunning ResourceStatus = "running"
	ResourceDone    ResourceStatus = "done"
	ResourceFailed  ResourceStatus = "failed"
)

// Event is one thing the engine said about a resource: a step planned, begun, finished or
// failed, or a diagnostic about it.
type Event struct {
	At     time.Time
	URN    string
	Type   string         // the resource type token, e.g. simcloud:index:Machine
	Name   string         // the resource's name in the program
	Op     string         // create, update, replace, delete, same, read, refresh…
	Status ResourceStatus // empty for a diagnostic
	// Changes are the properties the step changes, with their values before and after where
	// the engine showed them; secret values arrive as "[secret]".
	Changes  []Change
	Message  string // a diagnostic's text
	Severity string // info, warning or error, for a diagnostic
	// ID and Outputs are what a finished step left of the resource: the provider's id and its
	// plain outputs (see plainOutputs); empty for a step that left none, such as a delete.
	ID      string
	Outputs map[string]any
}

// Change is one property a step changes.
type Change struct {
	Path string `json:"path"`
	Kind string `json:"kind"` // add, update, delete, and their -replace forms
	Old  any    `json:"old,omitempty"`
	New  any    `json:"new,omitempty"`
}

// EventSink receives the engine's resource events as they happen. A progress writer handed to
// Preview, Up, Refresh or Destroy that also implements EventSink gets them, in order.
type EventSink interface {
	Event(Event)
}

// ProcessSink learns when each engine process ran. A progress writer handed to Preview, Up,
// Refresh or Destroy that also implements ProcessSink is told, as each process exits, when it
// started and exited: the engine's share of an operation's time.
type ProcessSink interface {
	Ran(started, exited time.Time)
}

// convert keeps the events about resources; the rest (prelude, summary, plain output) the
// progress text already carries.
func convert(ev apitype.EngineEvent) (Event, bool) {
	at := time.Now() // the engine's own stamp counts whole seconds
	step := func(m apitype.StepEventMetadata, status ResourceStatus) Event {
		e := Event{At: at, URN: m.URN, Type: m.Type, Name: nameOf(m.URN), Op: string(m.Op), Status: status}
		paths := make([]string, 0, len(m.DetailedDiff))
		for p := range m.DetailedDiff {
			paths = append(paths, p)
		}
		if len(paths) == 0 {
			paths = m.Diffs
		}
		slices.Sort(paths)
		for _, p := range paths {
			c := Change{Path: p, Kind: string(m.DetailedDiff[p].Kind)}
			if c.Kind == "" {
				c.Kind = "update"
			}
			if m.Old != nil {
				c.Old = m.Old.Inputs[p]
			}
			if m.New != nil {
				c.New = m.New.Inputs[p]
			}
			e.Changes = append(e.Changes, c)
		}
		return e
	}
	switch {
	case ev.ResourcePreEvent != nil:
		status := ResourceRunning
		if ev.ResourcePreEvent.Planning {
			status = ResourcePlanned
		}
		return step(ev.ResourcePreEvent.Metadata, status), true
	case ev.ResOutputsEvent != nil:
		if ev.ResOutputsEvent.Planning {
			return Event{}, false // the pre event of a preview said it all
		}
		e := step(ev.ResOutputsEvent.Metadata, ResourceDone)
		if s := ev.ResOutputsEvent.Metadata.New; s != nil {
			e.ID, e.Outputs = s.ID, plainOutputs(s.Outputs)
		}
		return e, true
	case ev.ResOpFailedEvent != nil:
		return step(ev.ResOpFailedEvent.Metadata, ResourceFailed), true
	case ev.DiagnosticEvent != nil && ev.DiagnosticEvent.URN != "" && !ev.DiagnosticEvent.Ephemeral:
		d := ev.DiagnosticEvent
		severity, _, _ := strings.Cut(d.Severity, "#")
		return Event{At: at, URN: d.URN, Name: nameOf(d.URN), Message: strings.TrimSpace(d.Message), Severity: severity}, true
	}
	return Event{}, false
}

// drifted is what a refresh preview found of one resource whose step began as a refresh,
// when it found it changed or gone: the step ends as the change the refresh would record.
// The values are the resource's inputs where it has the property as one, else its outputs.
func drifted(m apitype.StepEventMetadata) (Drifted, bool) {
	// A refresh previewed on its own ends as update or delete; one that begins a preview of the
	// program ends as refresh, with the same differences. One that found only what the provider
	// reports beside the inputs changed ends as same.
	switch {
	case m.Old == nil || strings.HasPrefix(m.Type, "pulumi:"):
		return Drifted{}, false
	case m.Op != apitype.OpUpdate && m.Op != apitype.OpDelete && m.Op != apitype.OpRefresh && m.Op != apitype.OpSame:
		return Drifted{}, false
	}
	d := Drifted{URN: m.URN, Type: m.Type, Name: nameOf(m.URN), Op: string(apitype.OpUpdate), Changes: []Change{}}
	if m.New == nil {
		if m.Op == apitype.OpSame {
			return Drifted{}, false
		}
		d.Op = string(apitype.OpDelete)
		return d, true
	}
	paths := slices.Clone(m.Diffs)
	for p := range m.DetailedDiff {
		if !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	for _, p := range readBack(m.Old, m.New) {
		if !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	value := func(s *apitype.StepEventStateMetadata, p string) any {
		if v, ok := s.Inputs[p]; ok {
			return masked(v)
		}
		return masked(s.Outputs[p])
	}
	for _, p := range paths {
		d.Changes = append(d.Changes, Change{Path: p, Kind: "update", Old: value(m.Old, p), New: value(m.New, p)})
	}
	return d, len(d.Changes) > 0
}

// readBack are the outputs the provider reports beside the inputs, as plain values, that a
// refresh found changed: a machine stopped by hand reads back another power state. The engine
// diffs only inputs, so it calls such a resource the same. Values that are objects or lists
// (a Kubernetes object's status) change on their own all the time and are left out.
func readBack(old, new *apitype.StepEventStateMetadata) []string {
	var out []string
	for k, v := range new.Outputs {
		if _, input := new.Inputs[k]; input || !plain(v) || !plain(old.Outputs[k]) || old.Outputs[k] == v {
			continue
		}
		out = append(out, k)
	}
	return out
}

// maxOutput caps one output value a resource's event carries: what is longer (a certificate, a
// rendered manifest) is nothing a person searches by.
const maxOutput = 256

// plainOutputs are a resource's outputs people read and search by: strings, numbers and
// booleans, a string no longer than maxOutput; secrets stay "[secret]".
func plainOutputs(outputs map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range outputs {
		v = masked(v)
		if s, ok := v.(string); (ok && len(s) <= maxOutput) || (!ok && plain(v)) {
			out[k] = v
		}
	}
	return out
}

// plain reports whether v is a string, a number or a boolean.
func plain(v any) bool {
	switch v.(type) {
	case string, float64, bool:
		return true
	}
	return false
}

// nameOf is the last part of a URN: urn:pulumi:stack::project::type::name.
func nameOf(urn string) string {
	if i := strings.LastIndex(urn, "::"); i >= 0 {
		return urn[i+2:]
	}
	return urn
}
