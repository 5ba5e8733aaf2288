package saga

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// memStore keeps checkpoints in memory and records every transition.
type memStore struct {
	states  map[string]*State
	order   []string
	history []string
	failOn  string // "step:status" whose Mark fails once, as a lost database would
}

func newMemStore() *memStore { return &memStore{states: map[string]*State{}} }

func (m *memStore) Load(_ context.Context, names []string) ([]State, error) {
	out := make([]State, len(names))
	for i, n := range names {
		if m.states[n] == nil {
			m.states[n] = &State{Name: n, Status: Pending}
			m.order = append(m.order, n)
		}
		out[i] = *m.states[n]
	}
	return out, nil
}

func (m *memStore) Mark(_ context.Context, name string, status Status, result json.RawMessage, errMsg string) error {
	if m.failOn == name+":"+string(status) {
		m.failOn = ""
		return errors.New("connection lost")
	}
	st := m.states[name]
	st.Status, st.Error = status, errMsg
	if result != nil {
		st.Result = result
	}
	m.history = append(m.history, name+":"+string(status))
	return nil
}

// world is a fake system the steps act on: which effects exist now.
type world struct {
	effects     map[string]bool
	calls       []string
	interrupted []string // the steps whose Do learnt that an earlier run began them
}

func steps(w *world, failing map[string]error) []Step {
	mk := func(name string, undoable bool) Step {
		s := Step{Name: name, Do: func(ctx context.Context, r *Run) (json.RawMessage, error) {
			w.calls = append(w.calls, "do "+name)
			if r.Interrupted(name) {
				w.interrupted = append(w.interrupted, name)
			}
			if undoable {
				w.effects[name] = true // the effect happens even when the step then fails
			}
			if err := failing[name]; err != nil {
				return nil, err
			}
			return json.RawMessage(`"` + name + ` result"`), nil
		}}
		if undoable {
			s.Undo = func(ctx context.Context, r *Run) error {
				w.calls = append(w.calls, "undo "+name)
				if err := failing["undo "+name]; err != nil {
					return err
				}
				delete(w.effects, name)
				return nil
			}
		}
		return s
	}
	return []Step{mk("resolve", true), mk("govern", false), mk("preview", false), mk("up", true), mk("record", false)}
}

func TestExecute_AllStepsSucceed(t *testing.T) {
	w := &world{effects: map[string]bool{}}
	store := newMemStore()
	if err := Execute(context.Background(), store, steps(w, nil), false); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"resolve", "govern", "preview", "up", "record"} {
		if store.states[n].Status != Done {
			t.Fatalf("%s is %s", n, store.states[n].Status)
		}
	}
	if !w.effects["up"] || !w.effects["resolve"] {
		t.Fatal("effects missing after success")
	}
}

func TestExecute_FailureUndoesEverythingThatBeganInReverse(t *testing.T) {
	cases := []struct {
		failAt    string
		wantCalls []string
	}{
		{"govern", []string{"do resolve", "do govern", "undo resolve"}},
		{"up", []string{"do resolve", "do govern", "do preview", "do up", "undo up", "undo resolve"}},
		{"record", []string{"do resolve", "do govern", "do preview", "do up", "do record", "undo up", "undo resolve"}},
	}
	for _, c := range cases {
		t.Run(c.failAt, func(t *testing.T) {
			w := &world{effects: map[string]bool{}}
			store := newMemStore()
			err := Execute(context.Background(), store, steps(w, map[string]error{c.failAt: errors.New("boom")}), false)
			var f *Failure
			if !errors.As(err, &f) || f.Step != c.failAt || !f.Compensated {
				t.Fatalf("got %v, want a compensated failure at %s", err, c.failAt)
			}
			if !reflect.DeepEqual(w.calls, c.wantCalls) {
				t.Fatalf("calls %v, want %v", w.calls, c.wantCalls)
			}
			if len(w.effects) != 0 {
				t.Fatalf("effects left behind: %v", w.effects)
			}
			if store.states[c.failAt].Error != "boom" {
				t.Fatalf("the cause was not kept: %+v", store.states[c.failAt])
			}
		})
	}
}

func TestExecute_ResumeSkipsDoneStepsAndRerunsTheInterruptedOne(t *testing.T) {
	w := &world{effects: map[string]bool{}}
	store := newMemStore()
	// A crash left resolve, govern and preview done and up running.
	_, _ = store.Load(context.Background(), []string{"resolve", "govern", "preview", "up", "record"})
	for _, n := range []string{"resolve", "govern", "preview"} {
		store.states[n].Status, store.states[n].Result = Done, json.RawMessage(`"`+n+` result"`)
	}
	store.states["up"].Status = Running
	if err := Execute(context.Background(), store, steps(w, nil), false); err != nil {
		t.Fatal(err)
	}
	if want := []string{"do up", "do record"}; !reflect.DeepEqual(w.calls, want) {
		t.Fatalf("calls %v, want %v", w.calls, want)
	}
	if !reflect.DeepEqual(w.interrupted, []string{"up"}) {
		t.Fatalf("interrupted %v, want the up, which the crash left running", w.interrupted)
	}
}

func TestExecute_ResumesAnInterruptedUndo(t *testing.T) {
	w := &world{effects: map[string]bool{"resolve": true, "up": true}}
	store := newMemStore()
	_, _ = store.Load(context.Background(), []string{"resolve", "govern", "preview", "up", "record"})
	for _, n := range []string{"resolve", "govern", "preview"} {
		store.states[n].Status = Done
	}
	store.states["up"].Status, store.states["up"].Error = Undoing, "boom"
	err := Execute(context.Background(), store, steps(w, nil), false)
	var f *Failure
	if !errors.As(err, &f) || !f.Compensated || !strings.Contains(f.Error(), "boom") {
		t.Fatalf("got %v", err)
	}
	if want := []string{"undo up", "undo resolve"}; !reflect.DeepEqual(w.calls, want) {
		t.Fatalf("calls %v, want %v (no step runs forward again)", w.calls, want)
	}
}

func TestExecute_TransientErrorStopsWithoutUndoingUntilTheLastAttempt(t *testing.T) {
	w := &world{effects: map[string]bool{}}
	store := newMemStore()
	flaky := map[string]error{"up": Transient(errors.New("state backend unreachable"))}
	err := Execute(context.Background(), store, steps(w, flaky), false)
	if !IsTransient(err) || store.states["up"].Status != Running || !w.effects["resolve"] {
		t.Fatalf("got %v with up %s; want a transient stop that undoes nothing", err, store.states["up"].Status)
	}
	err = Execute(context.Background(), store, steps(w, flaky), true)
	var f *Failure
	if !errors.As(err, &f) || len(w.effects) != 0 {
		t.Fatalf("last attempt: got %v, effects %v; want a compensated failure", err, w.effects)
	}
}

func TestExecute_UndoFailureIsReportedAndTheRestStillUndone(t *testing.T) {
	w := &world{effects: map[string]bool{}}
	store := newMemStore()
	err := Execute(context.Background(), store, steps(w, map[string]error{"record": errors.New("boom"), "undo up": errors.New("destroy hung")}), false)
	var f *Failure
	if !errors.As(err, &f) || f.Compensated || len(f.UndoErrs) != 1 {
		t.Fatalf("got %v", err)
	}
	if w.effects["resolve"] || !w.effects["up"] {
		t.Fatalf("effects %v: resolve must be undone though up's undo failed", w.effects)
	}
	if store.states["up"].Status != UndoFailed {
		t.Fatalf("up is %s", store.states["up"].Status)
	}
}

func TestExecute_CancelledRunUndoes(t *testing.T) {
	w := &world{effects: map[string]bool{}}
	store := newMemStore()
	ctx, cancel := context.WithCancelCause(context.Background())
	s := steps(w, nil)
	s[3].Do = func(ctx context.Context, r *Run) (json.RawMessage, error) {
		w.effects["up"] = true
		cancel(ErrCancelled)
		return nil, Transient(ctx.Err()) // even a passing error ends a cancelled run
	}
	err := Execute(ctx, store, s, false)
	var f *Failure
	if !errors.As(err, &f) || !errors.Is(err, context.Canceled) || !errors.Is(err, ErrCancelled) || len(w.effects) != 0 {
		t.Fatalf("got %v, effects %v", err, w.effects)
	}
}

func TestExecute_TimedOutRunUndoes(t *testing.T) {
	w := &world{effects: map[string]bool{}}
	store := newMemStore()
	ctx, cancel := context.WithTimeoutCause(context.Background(), time.Millisecond, ErrTimedOut)
	defer cancel()
	s := steps(w, nil)
	s[3].Do = func(ctx context.Context, r *Run) (json.RawMessage, error) {
		w.effects["up"] = true
		<-ctx.Done() // a provider that hangs
		return nil, ctx.Err()
	}
	err := Execute(ctx, store, s, false)
	var f *Failure
	if !errors.As(err, &f) || !errors.Is(err, ErrTimedOut) || errors.Is(err, ErrCancelled) || len(w.effects) != 0 {
		t.Fatalf("got %v, effects %v: want a failure that undid everything", err, w.effects)
	}
}

func TestExecute_ShutdownStopsWithoutUndoing(t *testing.T) {
	w := &world{effects: map[string]bool{}}
	store := newMemStore()
	ctx, cancel := context.WithCancel(context.Background())
	s := steps(w, nil)
	s[3].Do = func(ctx context.Context, r *Run) (json.RawMessage, error) {
		w.effects["up"] = true
		cancel() // the server is stopping, not the user cancelling
		return nil, ctx.Err()
	}
	err := Execute(ctx, store, s, false)
	if !IsTransient(err) || !w.effects["up"] || store.states["up"].Status != Running {
		t.Fatalf("got %v, effects %v, up %s: want a stop to resume later with nothing undone", err, w.effects, store.states["up"].Status)
	}
}

func TestExecute_LostCheckpointIsTransient(t *testing.T) {
	w := &world{effects: map[string]bool{}}
	store := newMemStore()
	store.failOn = "preview:done"
	if err := Execute(context.Background(), store, steps(w, nil), false); !IsTransient(err) {
		t.Fatalf("got %v, want transient", err)
	}
	// The next attempt runs preview again (it is idempotent) and finishes.
	if err := Execute(context.Background(), store, steps(w, nil), false); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(strings.Join(w.calls, ","), "do preview"); n != 2 {
		t.Fatalf("preview ran %d times", n)
	}
}

func TestRun_ResultOfEarlierStep(t *testing.T) {
	store := newMemStore()
	var got string
	s := []Step{
		{Name: "a", Do: func(context.Context, *Run) (json.RawMessage, error) { return json.RawMessage(`{"ip":"10.0.0.2"}`), nil }},
		{Name: "b", Do: func(_ context.Context, r *Run) (json.RawMessage, error) {
			var v struct{ IP string }
			err := r.Result("a", &v)
			got = v.IP
			return nil, err
		}},
	}
	if err := Execute(context.Background(), store, s, false); err != nil || got != "10.0.0.2" {
		t.Fatalf("err %v, got %q", err, got)
	}
}

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
