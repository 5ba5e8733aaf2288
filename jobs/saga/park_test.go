package saga

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestExecute_ParkedStepWaitsAndResumesWhereItStopped(t *testing.T) {
	w := &world{effects: map[string]bool{}}
	store := newMemStore()
	approved := false
	withGate := func() []Step {
		s := steps(w, nil)
		gate := Step{Name: "approve", Do: func(ctx context.Context, r *Run) (json.RawMessage, error) {
			w.calls = append(w.calls, "do approve")
			if !approved {
				return nil, fmt.Errorf("approval: %w", ErrParked)
			}
			return nil, nil
		}}
		return append(s[:3:3], append([]Step{gate}, s[3:]...)...)
	}
	// A cancelled context (the lease went with the park) must not turn the park into a stop.
	ctx, cancel := context.WithCancel(context.Background())
	s := withGate()
	park := s[3].Do
	s[3].Do = func(ctx context.Context, r *Run) (json.RawMessage, error) {
		defer cancel()
		return park(ctx, r)
	}
	err := Execute(ctx, store, s, false)
	if !errors.Is(err, ErrParked) || IsTransient(err) {
		t.Fatalf("got %v, want the run parked", err)
	}
	if store.states["approve"].Status != Pending || store.states["up"].Status != Pending || !w.effects["resolve"] {
		t.Fatalf("approve %s, up %s, effects %v: want it waiting with nothing undone",
			store.states["approve"].Status, store.states["up"].Status, w.effects)
	}
	approved, w.calls = true, nil
	if err := Execute(context.Background(), store, withGate(), false); err != nil {
		t.Fatal(err)
	}
	if want := []string{"do approve", "do up", "do record"}; !reflect.DeepEqual(w.calls, want) {
		t.Fatalf("calls %v, want %v: the steps before the park are not run again", w.calls, want)
	}
	if len(w.interrupted) != 0 {
		t.Fatalf("interrupted %v: a parked run stopped between steps, in none of them", w.interrupted)
	}
}

func TestExecute_WritesAStepsEndWithTheNextOnesStart(t *testing.T) {
	w := &world{effects: map[string]bool{}}
	store := newMemStore()
	if err := Execute(context.Background(), store, lazySteps(t, w, store, nil), false); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"resolve:running lazy",
		"resolve:done+govern:running lazy",
		"govern:done+preview:running lazy",
		"preview:done+up:running", // the up waits for the disk, and so for everything before it
		"up:done+record:running lazy",
		"record:done", // the end of the run is durable
	}
	if !reflect.DeepEqual(store.history, want) {
		t.Fatalf("writes\n%s\nwant\n%s", strings.Join(store.history, "\n"), strings.Join(want, "\n"))
	}
	if string(store.states["preview"].Result) != `"preview result"` || string(store.states["up"].Result) != `"up result"` {
		t.Fatalf("results: preview %s, up %s", store.states["preview"].Result, store.states["up"].Result)
	}
}

// A crash of the store after any write loses the Lazy writes since the last Durable one. The
// run, resumed, ends as a run without a crash does: every step done, or everything undone; an
// up run again is told it was interrupted, and no step ran before its start was as durable as
// it needs (lazySteps checks that).
func TestExecute_StoreCrashAfterAnyWriteResumes(t *testing.T) {
	cases := []struct {
		name      string
		failing   map[string]error
		writes    int // in a run without a crash
		wantRows  []string
		wantUp    bool
		wantFails bool
	}{
		{"succeeds", nil, 6, []string{"record", "resolve"}, true, false},
		{"record fails", map[string]error{"record": errors.New("boom")}, 10, nil, false, true},
	}
	for _, c := range cases {
		for at := 1; at <= c.writes; at++ {
			t.Run(fmt.Sprintf("%s/crash after write %d", c.name, at), func(t *testing.T) {
				w := &world{effects: map[string]bool{}}
				store := newMemStore()
				store.crashAfter = at
				err := Execute(context.Background(), store, lazySteps(t, w, store, c.failing), false)
				if err != nil && !IsTransient(err) {
					var f *Failure
					if !errors.As(err, &f) || !c.wantFails {
						t.Fatalf("first run: %v", err)
					}
				}
				crashed := slices.Clone(store.history)
				store.restart()
				err = Execute(context.Background(), store, lazySteps(t, w, store, c.failing), false)
				var f *Failure
				switch {
				case c.wantFails && (!errors.As(err, &f) || !f.Compensated):
					t.Fatalf("resumed run: %v, want a compensated failure", err)
				case !c.wantFails && err != nil:
					t.Fatalf("resumed run: %v", err)
				}
				if got := slices.Sorted(maps.Keys(store.rows)); !slices.Equal(got, c.wantRows) {
					t.Errorf("rows %v, want %v", got, c.wantRows)
				}
				if w.effects["up"] != c.wantUp {
					t.Errorf("machine made: %v, want %v", w.effects["up"], c.wantUp)
				}
				ups := 0
				for _, call := range w.calls {
					if call == "do up" {
						ups++
					}
				}
				if ups > 0 && len(w.interrupted) != ups-1 {
					t.Errorf("up ran %d times, told it was interrupted %d times: want every run after the first told", ups, len(w.interrupted))
				}
				if t.Failed() {
					t.Logf("writes before the crash: %s\ncalls: %s", strings.Join(crashed, ", "), strings.Join(w.calls, ", "))
				}
			})
		}
	}
}
