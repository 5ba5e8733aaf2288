// Package stack holds stack definitions: versioned graphs of components (slots) whose inputs
// are wired to the stack's parameters and to other slots' outputs, with a lifecycle state
// machine and named day-2 operations; their validation, versions, publishing and forks.
package stack

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/google/uuid"
)

// Definition is what a stack's draft holds and a version snapshots. Day-2 operations and routes
// are kept beside it in a version (stack_day2_operations, event_routing_rules), and inside it in
// a draft.
type Definition struct {
	// Parameters is the stack's input schema, in the component schema subset
	// (component.Schema): what a person deploying the stack fills in.
	Parameters json.RawMessage `json:"parameters"`
	Slots      []Slot          `json:"slots"`
	Machine    Machine         `json:"machine"`
	Operations []Operation     `json:"operations,omitempty"`
	// Routes turn events into triggers of the state machine.
	Routes []Route `json:"routes,omitempty"`
}

// Slot is one component of the stack, deployed as one deployment of each instance.
type Slot struct {
	// Name is an identifier ([a-z][a-z0-9_]*): expressions name it as slots.<name>.outputs.
	Name      string    `json:"name"`
	Component uuid.UUID `json:"component_id"`
	Version   int       `json:"version"`
	// Inputs wires each input of the component; an input left out takes its default or its
	// resolver.
	Inputs map[string]Wiring `json:"inputs,omitempty"`
	// DependsOn names slots this one waits for beyond those its wiring reads.
	DependsOn []string `json:"depends_on,omitempty"`
}

// Wiring is where one input's value comes from.
type Wiring struct {
	Kind WiringKind `json:"kind"`
	// Value is a literal's value.
	Value any `json:"value,omitempty"`
	// Param names a stack parameter.
	Param string `json:"param,omitempty"`
	// Slot and Output name an upstream slot's output.
	Slot   string `json:"slot,omitempty"`
	Output string `json:"output,omitempty"`
	// Expr is a CEL expression over params and slots.<name>.outputs.
	Expr string `json:"expr,omitempty"`
}

// WiringKind says which of Wiring's fields holds the value.
type WiringKind string

// The kinds of wiring.
const (
	Literal    WiringKind = "literal"
	Param      WiringKind = "param"
	Output     WiringKind = "output"
	Expression WiringKind = "expr"
)

// Machine is an instance's lifecycle state machine.
type Machine struct {
	States      []State      `json:"states"`
	Transitions []Transition `json:"transitions"`
}

// State is one state of the machine; exactly one is initial, and none leaves a terminal one.
type State struct {
	Name     string `json:"name"`
	Initial  bool   `json:"initial,omitempty"`
	Terminal bool   `json:"terminal,omitempty"`
}

// Transition moves an instance from one state to another when its trigger is fired, after
// running its action. When Timeout is set and the instance stays in To that long, OnTimeout
// (a trigger leaving To) is fired.
type Transition struct {
	From      string   `json:"from"`
	To        string   `json:"to"`
	Trigger   string   `json:"trigger"`
	Action    []Action `json:"action,omitempty"`
	Timeout   string   `json:"timeout,omitempty"` // a Go duration, such as "30m"
	OnTimeout string   `json:"on_timeout,omitempty"`
}

// Operation is a named day-2 operation, offered to people while the instance is in one of its
// RequiredStates: its actions run as ordinary operations on the slots, in order, and then it
// fires TriggersTransition, when set.
type Operation struct {
	Name               string          `json:"name"`
	DisplayName        string          `json:"display_name,omitempty"`
	Description        string          `json:"description,omitempty"`
	InputSchema        json.RawMessage `json:"input_schema,omitempty"`
	RequiredStates     []string        `json:"required_states"`
	Actions            []Action        `json:"actions"`
	TriggersTransition string          `json:"triggers_transition,omitempty"`
}

// Action is one thing done to one slot.
type Action struct {
	Slot string `json:"slot"`
	Do   Verb   `json:"do"`
	// Inputs, for an update: CEL expressions over params, inputs (the operation's) and
	// slots.<name>.outputs, one per input changed.
	Inputs map[string]string `json:"inputs,omitempty"`
}

// Verb is what an action does to its slot.
type Verb string

// The verbs of actions.
const (
	Update   Verb = "update"
	Refresh  Verb = "refresh"
	Upgrade  Verb = "upgrade"
	Redeploy Verb = "redeploy"
)

// Initial returns the machine's initial state, or "" when it has none.
func (m Machine) Initial() string {
	for _, s := range m.States {
		if s.Initial {
			return s.Name
		}
	}
	return ""
}

// Fire returns the transition trigger takes from state, or false when the state has none.
func (m Machine) Fire(state, trigger string) (Transition, bool) {
	for _, t := range m.Transitions {
		if t.From == state && t.Trigger == trigger {
			return t, true
		}
	}
	return Transition{}, false
}

// Triggers lists the triggers that leave state, in the order they were written.
func (m Machine) Triggers(state string) []string {
	var out []string
	for _, t := range m.Transitions {
		if t.From == state {
			out = append(out, t.Trigger)
		}
	}
	return out
}

// Upstream returns the slots s waits for: those its wiring reads and those it names in
// DependsOn, each once, in the order first met.
func (s Slot) Upstream() []string {
	var out []string
	seen := map[string]bool{}
	add := func(n string) {
		if n != "" && n != s.Name && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, name := range sortedKeys(s.Inputs) {
		w := s.Inputs[name]
		switch w.Kind {
		case Output:
			add(w.Slot)
		case Expression:
			for _, n := range SlotsIn(w.Expr) {
				add(n)
			}
		}
	}
	for _, n := range s.DependsOn {
		add(n)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
