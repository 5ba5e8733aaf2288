// Package graph runs graphs of operations: an environment's mandatory components (a graph
// without edges), a landing zone's system services, a stack instance's slots. Each node is one
// operation on one deployment; a node starts when the nodes it comes after have succeeded, at
// most a bound of them at once, and each operation's end asks for the graph's next step in
// the transaction that records it, so a restart goes on where the graph was.
package graph

import (
	"fmt"
	"slices"
)

// State is where one node of a graph stands.
type State int

// The states of a node.
const (
	Waiting   State = iota // not started
	Running                // its operation is queued, running or awaiting approval
	Succeeded              // its operation succeeded (or there was nothing to do)
	Failed                 // its operation ended otherwise
)

func (s State) String() string {
	return [...]string{"waiting", "running", "succeeded", "failed"}[s]
}

// Node is one step of a graph.
type Node struct {
	Name  string
	After []string
	State State
}

// Step is what a graph needs next.
type Step struct {
	// Start lists the nodes to start now, in the graph's order.
	Start []string
	// Done: every node succeeded.
	Done bool
	// Stopped: a node failed (Failed names them) and none runs any more; or nothing can start
	// (a node comes after one that is not in the graph).
	Stopped bool
	Failed  []string
}

// Next says what a graph needs: the waiting nodes whose predecessors all succeeded, up to
// bound running at once (no bound when bound < 1). Once a node has failed nothing more starts,
// and the graph stops when those running have ended.
func Next(nodes []Node, bound int) Step {
	state := make(map[string]State, len(nodes))
	for _, n := range nodes {
		state[n.Name] = n.State
	}
	var step Step
	running, done := 0, 0
	for _, n := range nodes {
		switch n.State {
		case Running:
			running++
		case Succeeded:
			done++
		case Failed:
			step.Failed = append(step.Failed, n.Name)
		}
	}
	if done == len(nodes) {
		step.Done = true
		return step
	}
	if len(step.Failed) > 0 {
		step.Stopped = running == 0
		return step
	}
	for _, n := range nodes {
		if bound > 0 && running >= bound {
			break
		}
		if n.State == Waiting && ready(n, state) {
			step.Start = append(step.Start, n.Name)
			running++
		}
	}
	step.Stopped = running == 0
	return step
}

func ready(n Node, state map[string]State) bool {
	for _, a := range n.After {
		if state[a] != Succeeded {
			return false
		}
	}
	return true
}

// Reverse turns a graph around, for taking down what it made: each node comes after those
// that came after it.
func Reverse(nodes []Node) []Node {
	out := make([]Node, len(nodes))
	for i, n := range nodes {
		out[i] = Node{Name: n.Name, State: n.State}
	}
	index := make(map[string]int, len(nodes))
	for i, n := range nodes {
		index[n.Name] = i
	}
	for _, n := range nodes {
		for _, a := range n.After {
			if i, ok := index[a]; ok {
				out[i].After = append(out[i].After, n.Name)
			}
		}
	}
	return out
}

// Layers groups a graph's nodes by how deep they sit: the first layer waits for nothing, each
// next one for nodes of the layers before it. Nodes of one layer may run at once. An error
// names the nodes caught in a cycle or coming after an unknown node.
func Layers(nodes []Node) ([][]string, error) {
	placed := make(map[string]bool, len(nodes))
	var out [][]string
	for len(placed) < len(nodes) {
		var layer []string
		for _, n := range nodes {
			if placed[n.Name] {
				continue
			}
			if !slices.ContainsFunc(n.After, func(a string) bool { return !placed[a] }) {
				layer = append(layer, n.Name)
			}
		}
		if len(layer) == 0 {
			var left []string
			for _, n := range nodes {
				if !placed[n.Name] {
					left = append(left, n.Name)
				}
			}
			return out, fmt.Errorf("%v wait for each other, or for a step that is not there", left)
		}
		for _, n := range layer {
			placed[n] = true
		}
		out = append(out, layer)
	}
	return out, nil
}

// Cycle returns the nodes of one cycle in the graph, in order (a → b → a), or nil when there
// is none. Edges to nodes not in the graph are ignored.
func Cycle(nodes []Node) []string {
	after := make(map[string][]string, len(nodes))
	for _, n := range nodes {
		after[n.Name] = n.After
	}
	const (
		unseen = iota
		open
		closed
	)
	mark := map[string]int{}
	var path []string
	var found []string
	var visit func(string) bool
	visit = func(n string) bool {
		mark[n] = open
		path = append(path, n)
		for _, a := range after[n] {
			if _, ok := after[a]; !ok {
				continue
			}
			switch mark[a] {
			case open:
				i := slices.Index(path, a)
				found = append(slices.Clone(path[i:]), a)
				return true
			case unseen:
				if visit(a) {
					return true
				}
			}
		}
		path = path[:len(path)-1]
		mark[n] = closed
		return false
	}
	for _, n := range nodes {
		if mark[n.Name] == unseen && visit(n.Name) {
			return found
		}
	}
	return nil
}
