package lifecycle

import (
	"errors"
	"slices"
	"testing"

	"nimbus/app/kernel/problem"
)

type light string

var lights = Machine[light]{Name: "light", Start: "off", Moves: map[light][]light{"off": {"on"}, "on": {"off", "broken"}}}

func TestMachine_MovesAreItsData(t *testing.T) {
	if !lights.Allows("off", "on") || lights.Allows("off", "broken") {
		t.Fatal("Allows does not follow the moves")
	}
	if got := lights.Sources("off"); !slices.Equal(got, []light{"on"}) {
		t.Fatalf("Sources(off) = %v", got)
	}
	if got := lights.States(); !slices.Equal(got, []light{"broken", "off", "on"}) {
		t.Fatalf("States = %v", got)
	}
	if !lights.Ended("broken") || lights.Ended("on") {
		t.Fatal("an end is a status with no move out")
	}
}

func TestMachine_ARefusedMoveIsAnIllegalMoveOnTheStatus(t *testing.T) {
	err := lights.Check("hall", "off", "broken")
	if !errors.Is(err, ErrIllegalMove) {
		t.Fatalf("Check = %v, want an illegal move", err)
	}
	var v *problem.ValidationError
	if !errors.As(err, &v) || v.Fields[0].Field != "status" || v.Fields[0].Rule != "state" {
		t.Fatalf("a refused move is not a problem with the status: %#v", v)
	}
	if err.Error() != "hall is off: it cannot become broken" {
		t.Fatalf("message = %q", err)
	}
	if lights.Check("hall", "on", "off") != nil {
		t.Fatal("an allowed move was refused")
	}
}
