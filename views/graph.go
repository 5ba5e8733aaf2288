package views

import (
	"fmt"
	"math"
	"strings"
)

// The drawings here are laid out on the server as SVG: boxes in columns, arrows between them.
// Colours come from the stylesheet's classes, so both themes read them.

// StateNode is one state of a state machine as drawn.
type StateNode struct {
	Name              string
	Initial, Terminal bool
}

// Edge is one arrow: a transition labelled with its trigger, or a slot read by another.
type Edge struct {
	From, To, Label string
}

// SlotBox is one slot of a stack as drawn: its status colours it, URL (when set) opens its
// deployment, After names the slots it reads from.
type SlotBox struct {
	Name, Status, URL string
	// Note is a second line under the name, such as the component it deploys.
	Note  string
	After []string
}

// Diagram is a drawing laid out: its size, its boxes and its arrows.
type Diagram struct {
	Width, Height int
	Boxes         []Box
	Arrows        []Arrow
}

// Box is one rounded box of a diagram.
type Box struct {
	Name        string
	X, Y, W, H  int
	Lines       []string // under the name
	Class, URL  string
	Title       string
	Highlighted bool
}

// Arrow is one arrow of a diagram: a curve through its points (a quadratic one through
// three, a cubic one through four) and where its label sits.
type Arrow struct {
	From, To       string
	Points         []Point
	Label          string
	LabelX, LabelY int
	Title          string
}

// Point is a point of a drawing, in pixels from its top left corner.
type Point struct{ X, Y int }

// Path is the arrow as an SVG path.
func (a Arrow) Path() string {
	var b strings.Builder
	for i, p := range a.Points {
		switch {
		case i == 0:
			b.WriteString("M")
		case i == 1 && len(a.Points) == 3:
			b.WriteString(" Q")
		case i == 1:
			b.WriteString(" C")
		default:
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%d %d", p.X, p.Y)
	}
	return b.String()
}

const (
	stateW, stateH = 140, 44
	slotW, slotH   = 170, 56
	margin         = 24
)

// LayoutStates lays a state machine out left to right: the initial state first, terminal
// states last, the others by how many transitions they are from the initial one. An arrow
// per transition, curved where two states point at each other or where it jumps a column.
func LayoutStates(states []StateNode, transitions []Edge, current string) Diagram {
	col := stateColumns(states, transitions)
	columns := map[int][]string{}
	last := 0
	for _, s := range states {
		columns[col[s.Name]] = append(columns[col[s.Name]], s.Name)
		last = max(last, col[s.Name])
	}
	boxes := placeColumns(columns, last, stateW, stateH, 120, 48)
	d := Diagram{}
	for _, s := range states {
		b := boxes[s.Name]
		b.Name, b.Class, b.Highlighted = s.Name, "state", s.Name == current
		b.Title = s.Name
		switch {
		case s.Initial:
			b.Title += ", the initial state"
		case s.Terminal:
			b.Title += ", a terminal state"
		}
		if b.Highlighted {
			b.Class += " state-current"
			b.Title += "; the instance is here"
		}
		d.Boxes = append(d.Boxes, b)
	}
	pairs := map[[2]string]bool{}
	for _, t := range transitions {
		pairs[[2]string{t.From, t.To}] = true
	}
	for _, t := range transitions {
		from, okF := boxes[t.From]
		to, okT := boxes[t.To]
		if !okF || !okT {
			continue
		}
		bend := 0.0
		if pairs[[2]string{t.To, t.From}] {
			bend = 22
		}
		if jump := abs(col[t.To] - col[t.From]); jump > 1 || jump == 0 && t.From != t.To {
			bend = 36 + 18*float64(max(jump-1, 0))
		}
		a := curve(from, to, bend)
		a.From, a.To, a.Label = t.From, t.To, t.Label
		a.Title = fmt.Sprintf("%s → %s on %s", t.From, t.To, t.Label)
		d.Arrows = append(d.Arrows, a)
	}
	d.fit()
	return d
}

// stateColumns puts the initial state in column 0, each other state at its distance from it,
// and terminal states after every other column.
func stateColumns(states []StateNode, transitions []Edge) map[string]int {
	col := map[string]int{}
	terminal := map[string]bool{}
	var queue []string
	for _, s := range states {
		terminal[s.Name] = s.Terminal
		if s.Initial {
			col[s.Name] = 0
			queue = append(queue, s.Name)
		}
	}
	for len(queue) > 0 {
		at := queue[0]
		queue = queue[1:]
		for _, t := range transitions {
			if _, seen := col[t.To]; t.From == at && !seen {
				col[t.To] = col[at] + 1
				queue = append(queue, t.To)
			}
		}
	}
	// States the initial one never reaches sit beside it; terminal ones come last.
	last := 0
	for _, s := range states {
		if _, ok := col[s.Name]; !ok {
			col[s.Name] = 0
		}
		if !s.Terminal {
			last = max(last, col[s.Name])
		}
	}
	for _, s := range states {
		if s.Terminal && !s.Initial {
			col[s.Name] = last + 1
		}
	}
	return col
}

// LayoutSlots lays a stack's slots out in columns, one per layer (slots of one layer may
// deploy at once), each box coloured by its status, an arrow from each slot to those reading
// from it.
func LayoutSlots(layers [][]SlotBox) Diagram {
	columns := map[int][]string{}
	for i, layer := range layers {
		for _, s := range layer {
			columns[i] = append(columns[i], s.Name)
		}
	}
	boxes := placeColumns(columns, len(layers)-1, slotW, slotH, 70, 20)
	d := Diagram{}
	for _, layer := range layers {
		for _, s := range layer {
			b := boxes[s.Name]
			b.Name, b.URL = s.Name, s.URL
			b.Class = "slot slot-" + SlotTone(s.Status)
			if s.Status != "" {
				b.Lines = append(b.Lines, StatusWord(s.Status))
			}
			if s.Note != "" {
				b.Lines = append(b.Lines, s.Note)
			}
			b.Title = s.Name
			if s.Status != "" {
				b.Title += ": " + StatusWord(s.Status)
			}
			if len(s.After) > 0 {
				b.Title += "; after " + strings.Join(s.After, ", ")
			}
			d.Boxes = append(d.Boxes, b)
		}
	}
	for _, layer := range layers {
		for _, s := range layer {
			to := boxes[s.Name]
			for _, up := range s.After {
				from, ok := boxes[up]
				if !ok {
					continue
				}
				x1, y1 := from.X+from.W, from.Y+from.H/2
				x2, y2 := to.X, to.Y+to.H/2
				mid := (x1 + x2) / 2
				d.Arrows = append(d.Arrows, Arrow{From: up, To: s.Name, Title: up + " → " + s.Name,
					Points: []Point{{x1, y1}, {mid, y1}, {mid, y2}, {x2 - 2, y2}}})
			}
		}
	}
	d.fit()
	return d
}

// SlotTone is the colour a slot's status is drawn in: ok, err, warn or muted.
func SlotTone(status string) string {
	switch status {
	case "deployed", "succeeded", "active":
		return "ok"
	case "failed", "rejected":
		return "err"
	case "destroyed", "cancelled", "pending", "":
		return "muted"
	}
	return "warn"
}

// placeColumns places each column's boxes top to bottom, the columns left to right, each
// column centred on the tallest.
func placeColumns(columns map[int][]string, last, w, h, gapX, gapY int) map[string]Box {
	tallest := 0
	for _, names := range columns {
		tallest = max(tallest, len(names))
	}
	out := map[string]Box{}
	for c := 0; c <= last; c++ {
		names := columns[c]
		top := margin + (tallest-len(names))*(h+gapY)/2
		for i, n := range names {
			out[n] = Box{X: margin + c*(w+gapX), Y: top + i*(h+gapY), W: w, H: h}
		}
	}
	return out
}

// curve is an arrow between two boxes' edges, bent by bend pixels to its left (a quadratic
// curve), or a loop over the box when it returns to where it starts.
func curve(from, to Box, bend float64) Arrow {
	fx, fy := float64(from.X)+float64(from.W)/2, float64(from.Y)+float64(from.H)/2
	if from.Name == to.Name && from.X == to.X && from.Y == to.Y {
		x, y := int(fx), from.Y
		return Arrow{Points: []Point{{x - 20, y}, {x - 30, y - 40}, {x + 30, y - 40}, {x + 20, y - 2}}, LabelX: x, LabelY: y - 34}
	}
	tx, ty := float64(to.X)+float64(to.W)/2, float64(to.Y)+float64(to.H)/2
	dx, dy := tx-fx, ty-fy
	length := math.Hypot(dx, dy)
	// The control point sits off the middle of the line, on its left.
	cx, cy := (fx+tx)/2+bend*dy/length, (fy+ty)/2-bend*dx/length
	sx, sy := edge(from, cx-fx, cy-fy)
	ex, ey := edge(to, cx-tx, cy-ty)
	// Leave the arrowhead room before the target's edge.
	ex, ey = pullBack(ex, ey, cx, cy, 2)
	lx, ly := 0.25*sx+0.5*cx+0.25*ex, 0.25*sy+0.5*cy+0.25*ey
	return Arrow{Points: []Point{round(sx, sy), round(cx, cy), round(ex, ey)}, LabelX: int(math.Round(lx)), LabelY: int(math.Round(ly)) - 4}
}

// edge is where a ray from b's centre in direction (dx, dy) leaves b.
func edge(b Box, dx, dy float64) (float64, float64) {
	cx, cy := float64(b.X)+float64(b.W)/2, float64(b.Y)+float64(b.H)/2
	t := math.Inf(1)
	if dx != 0 {
		t = math.Min(t, float64(b.W)/2/math.Abs(dx))
	}
	if dy != 0 {
		t = math.Min(t, float64(b.H)/2/math.Abs(dy))
	}
	if math.IsInf(t, 1) {
		return cx, cy
	}
	return cx + t*dx, cy + t*dy
}

func round(x, y float64) Point { return Point{int(math.Round(x)), int(math.Round(y))} }

func pullBack(x, y, towardX, towardY, by float64) (float64, float64) {
	dx, dy := towardX-x, towardY-y
	l := math.Hypot(dx, dy)
	if l == 0 {
		return x, y
	}
	return x + by*dx/l, y + by*dy/l
}

// fit sizes the drawing to hold its boxes and arrows' labels, with a margin, moving everything
// down when a curve or a label reaches above the top.
func (d *Diagram) fit() {
	top := margin
	for _, a := range d.Arrows {
		top = min(top, a.LabelY-14)
		for _, p := range a.Points {
			top = min(top, p.Y-4)
		}
	}
	shift := max(0, -top+4)
	if shift > 0 {
		for i := range d.Boxes {
			d.Boxes[i].Y += shift
		}
		for i := range d.Arrows {
			d.Arrows[i].LabelY += shift
			for j := range d.Arrows[i].Points {
				d.Arrows[i].Points[j].Y += shift
			}
		}
	}
	for _, b := range d.Boxes {
		d.Width, d.Height = max(d.Width, b.X+b.W+margin), max(d.Height, b.Y+b.H+margin)
	}
	for _, a := range d.Arrows {
		d.Height = max(d.Height, a.LabelY+margin)
		d.Width = max(d.Width, a.LabelX+4*len(a.Label)+margin)
		for _, p := range a.Points {
			d.Height = max(d.Height, p.Y+margin)
		}
	}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
