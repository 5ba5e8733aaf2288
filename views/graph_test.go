package views

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// overlap names two boxes of d drawn over each other, or says "".
func overlap(d Diagram) string {
	for i, a := range d.Boxes {
		for _, b := range d.Boxes[i+1:] {
			if a.X < b.X+b.W && b.X < a.X+a.W && a.Y < b.Y+b.H && b.Y < a.Y+a.H {
				return a.Name + " and " + b.Name
			}
		}
	}
	return ""
}

// inside says whether every box and arrow of d lies within its size.
func inside(d Diagram) bool {
	for _, b := range d.Boxes {
		if b.X < 0 || b.Y < 0 || b.X+b.W > d.Width || b.Y+b.H > d.Height {
			return false
		}
	}
	for _, a := range d.Arrows {
		for _, p := range a.Points {
			if p.Y < 0 || p.Y > d.Height || p.X < 0 || p.X > d.Width {
				return false
			}
		}
	}
	return true
}

func column(d Diagram, name string) int {
	for _, b := range d.Boxes {
		if b.Name == name {
			return b.X
		}
	}
	return -1
}

func TestLayoutStates_InitialFirstTerminalLastAnArrowPerTransition(t *testing.T) {
	states := []StateNode{{Name: "retired", Terminal: true}, {Name: "maintenance"}, {Name: "active", Initial: true}, {Name: "degraded"}}
	transitions := []Edge{
		{From: "active", To: "maintenance", Label: "maintain"},
		{From: "maintenance", To: "active", Label: "resume"},
		{From: "active", To: "retired", Label: "retire"},
		{From: "maintenance", To: "degraded", Label: "break"},
		{From: "degraded", To: "degraded", Label: "poke"},
	}
	d := LayoutStates(states, transitions, "maintenance")
	if o := overlap(d); o != "" {
		t.Fatalf("%s overlap: %+v", o, d.Boxes)
	}
	if !inside(d) {
		t.Fatalf("the drawing (%dx%d) does not hold %+v %+v", d.Width, d.Height, d.Boxes, d.Arrows)
	}
	if a, m, g, r := column(d, "active"), column(d, "maintenance"), column(d, "degraded"), column(d, "retired"); !(a < m && m < g && g < r) {
		t.Errorf("columns: active %d, maintenance %d, degraded %d, retired %d; want them in that order", a, m, g, r)
	}
	if len(d.Arrows) != len(transitions) {
		t.Fatalf("%d arrows for %d transitions", len(d.Arrows), len(transitions))
	}
	for i, a := range d.Arrows {
		if a.Label != transitions[i].Label || a.From != transitions[i].From || a.To != transitions[i].To {
			t.Errorf("arrow %d is %s→%s %q, want %+v", i, a.From, a.To, a.Label, transitions[i])
		}
	}
	// Two states pointing at each other: the two arrows bend apart, so neither hides the other.
	if d.Arrows[0].Points[1] == d.Arrows[1].Points[1] || len(d.Arrows[0].Points) != 3 {
		t.Errorf("maintain and resume share a path: %v %v", d.Arrows[0].Points, d.Arrows[1].Points)
	}
	var current []string
	for _, b := range d.Boxes {
		if b.Highlighted {
			current = append(current, b.Name)
		}
	}
	if strings.Join(current, ",") != "maintenance" {
		t.Errorf("highlighted: %v, want maintenance", current)
	}
}

func TestLayoutSlots_ColumnsByLayerAnArrowPerReading(t *testing.T) {
	layers := [][]SlotBox{
		{{Name: "net", Status: "deployed", URL: "/deployments/1"}},
		{{Name: "a", Status: "deploying", After: []string{"net"}}, {Name: "b", Status: "failed", After: []string{"net"}}, {Name: "d", Status: "pending"}},
		{{Name: "c", After: []string{"a", "b"}}},
	}
	d := LayoutSlots(layers)
	if o := overlap(d); o != "" {
		t.Fatalf("%s overlap: %+v", o, d.Boxes)
	}
	if !inside(d) {
		t.Fatalf("the drawing (%dx%d) does not hold %+v", d.Width, d.Height, d.Boxes)
	}
	if column(d, "a") != column(d, "b") || column(d, "net") >= column(d, "a") || column(d, "a") >= column(d, "c") {
		t.Errorf("columns: %+v", d.Boxes)
	}
	if len(d.Arrows) != 4 {
		t.Errorf("%d arrows, want net→a, net→b, a→c, b→c", len(d.Arrows))
	}
	classes := map[string]string{}
	for _, b := range d.Boxes {
		classes[b.Name] = b.Class
	}
	for name, want := range map[string]string{"net": "slot-ok", "a": "slot-warn", "b": "slot-err", "c": "slot-muted"} {
		if !strings.Contains(classes[name], want) {
			t.Errorf("%s is drawn %q, want %s", name, classes[name], want)
		}
	}
}

func TestStateDiagram_RendersTitlesAndMarksTheCurrentState(t *testing.T) {
	var buf bytes.Buffer
	err := StateDiagram("machine", []StateNode{{Name: "up", Initial: true}, {Name: "down", Terminal: true}},
		[]Edge{{From: "up", To: "down", Label: "stop"}}, "up").Render(context.Background(), &buf)
	if err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	for _, want := range []string{`<title id="machine-title">`, `data-name="up" data-current`, `marker-end="url(#machine-head)"`, ">stop</text>", "<title>up → down on stop</title>"} {
		if !strings.Contains(html, want) {
			t.Errorf("the drawing lacks %s:\n%s", want, html)
		}
	}
}
