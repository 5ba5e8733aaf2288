package stack

import "nimbus/views"

// Drawing is the machine as views.StateDiagram draws it.
func (m Machine) Drawing() ([]views.StateNode, []views.Edge) {
	states := make([]views.StateNode, len(m.States))
	for i, s := range m.States {
		states[i] = views.StateNode{Name: s.Name, Initial: s.Initial, Terminal: s.Terminal}
	}
	edges := make([]views.Edge, len(m.Transitions))
	for i, t := range m.Transitions {
		edges[i] = views.Edge{From: t.From, To: t.To, Label: t.Trigger}
	}
	return states, edges
}
