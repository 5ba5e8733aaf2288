package graph

import (
	"reflect"
	"testing"
)

// diamond is a network, two machines on it, and a third machine after both.
func diamond(states ...State) []Node {
	n := []Node{{Name: "net"}, {Name: "a", After: []string{"net"}}, {Name: "b", After: []string{"net"}}, {Name: "c", After: []string{"a", "b"}}}
	for i, s := range states {
		n[i].State = s
	}
	return n
}

func TestNext(t *testing.T) {
	for _, c := range []struct {
		name  string
		nodes []Node
		bound int
		want  Step
	}{
		{"first the root", diamond(), 4, Step{Start: []string{"net"}}},
		{"independent nodes at once", diamond(Succeeded), 4, Step{Start: []string{"a", "b"}}},
		{"within the bound", diamond(Succeeded), 1, Step{Start: []string{"a"}}},
		{"the bound counts those running", diamond(Succeeded, Running), 1, Step{}},
		{"waits for every predecessor", diamond(Succeeded, Succeeded, Running), 4, Step{}},
		{"then the join", diamond(Succeeded, Succeeded, Succeeded), 4, Step{Start: []string{"c"}}},
		{"done", diamond(Succeeded, Succeeded, Succeeded, Succeeded), 4, Step{Done: true}},
		{"a failure starts nothing more", diamond(Succeeded, Failed, Running), 4, Step{Failed: []string{"a"}}},
		{"and stops once the rest ended", diamond(Succeeded, Failed, Succeeded), 4, Step{Stopped: true, Failed: []string{"a"}}},
		{"without edges all at once", []Node{{Name: "x"}, {Name: "y"}, {Name: "z"}}, 0, Step{Start: []string{"x", "y", "z"}}},
		{"after a node not there", []Node{{Name: "x", After: []string{"gone"}}}, 4, Step{Stopped: true}},
	} {
		if got := Next(c.nodes, c.bound); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: Next = %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestReverse_TakesDownLeavesFirst(t *testing.T) {
	back := Reverse(diamond())
	if got := Next(back, 4).Start; !reflect.DeepEqual(got, []string{"c"}) {
		t.Fatalf("reversed, first %v, want [c]", got)
	}
	back = Reverse(diamond(Waiting, Waiting, Waiting, Succeeded))
	if got := Next(back, 4).Start; !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Fatalf("reversed after c, %v, want [a b]", got)
	}
}

func TestLayers(t *testing.T) {
	got, err := Layers(diamond())
	if err != nil || !reflect.DeepEqual(got, [][]string{{"net"}, {"a", "b"}, {"c"}}) {
		t.Fatalf("Layers = %v, %v", got, err)
	}
	if _, err := Layers([]Node{{Name: "x", After: []string{"y"}}, {Name: "y", After: []string{"x"}}}); err == nil {
		t.Fatal("a cycle has layers")
	}
}

func TestCycle(t *testing.T) {
	if got := Cycle(diamond()); got != nil {
		t.Fatalf("diamond has cycle %v", got)
	}
	got := Cycle([]Node{{Name: "x", After: []string{"y"}}, {Name: "y", After: []string{"z"}}, {Name: "z", After: []string{"x"}}})
	if !reflect.DeepEqual(got, []string{"x", "y", "z", "x"}) {
		t.Fatalf("Cycle = %v", got)
	}
}
