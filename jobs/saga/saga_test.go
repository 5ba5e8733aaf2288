package saga

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"
)

// memStore keeps checkpoints in memory, as a database would on a disk: a Lazy write is seen at
// once but reaches the disk only with the next Durable one, so a crash of the store loses the
// Lazy writes since. Rows other than checkpoints (what a step hands out) are kept the same way.
type memStore struct {
	states  map[string]*State
	order   []string
	rows    map[string]bool
	history []string // every Mark, its moves joined by "+", then " lazy" when it was
	failOn  string   // "step:status" whose Mark fails once, as a lost database would

	durable     map[string]State // what survives a crash: the states and rows at the last Durable write
	durableRows map[string]bool
	crashAfter  int  // crash once this many Marks were made (0: never)
	down        bool // crashed: every call fails until restart
}

func newMemStore() *memStore {
	return &memStore{states: map[string]*State{}, rows: map[string]bool{}, durable: map[string]State{}, durableRows: map[string]bool{}}
}

var errDown = errors.New("connection lost")

func (m *memStore) Load(_ context.Context, names []string) ([]State, error) {
	if m.down {
		return nil, errDown
	}
	out := make([]State, len(names))
	for i, n := range names {
		if m.states[n] == nil {
			m.states[n] = &State{Name: n, Status: Pending} // lazily: a crash loses it, and the next Load makes it again
			m.order = append(m.order, n)
		}
		out[i] = *m.states[n]
	}
	return out, nil
}

func (m *memStore) Mark(_ context.Context, commit Commit, moves ...Move) error {
	if m.down {
		return errDown
	}
	var names []string
	for _, mv := range moves {
		if m.failOn == mv.Step+":"+string(mv.Status) {
			m.failOn = ""
			return errDown // the whole write fails: all or none
		}
		names = append(names, mv.Step+":"+string(mv.Status))
	}
	for _, mv := range moves {
		st := m.states[mv.Step]
		st.Status, st.Error = mv.Status, mv.Error
		if mv.Result != nil {
			st.Result = mv.Result
		}
	}
	entry := strings.Join(names, "+")
	if commit == Lazy {
		entry += " lazy"
	} else {
		m.flush()
	}
	m.history = append(m.history, entry)
	if m.crashAfter > 0 && len(m.history) == m.crashAfter {
		m.crash()
	}
	return nil
}

// put writes a row in its own Durable transaction, as a step's own writes are.
func (m *memStore) put(row string, present bool) error {
	if m.down {
		return errDown
	}
	if present {
		m.rows[row] = true
	} else {
		delete(m.rows, row)
	}
	m.flush()
	return nil
}

// flush makes everything written so far survive a crash.
func (m *memStore) flush() {
	m.durable = map[string]State{}
	for n, st := range m.states {
		m.durable[n] = *st
	}
	m.durableRows = maps.Clone(m.rows)
}

// crash loses what has not reached the disk, and leaves the store down until restart.
func (m *memStore) crash() {
	m.states = map[string]*State{}
	for n, st := range m.durable {
		m.states[n] = &st
	}
	m.rows = maps.Clone(m.durableRows)
	m.down = true
}

func (m *memStore) restart() { m.down = false }

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

// lazySteps are the steps of a deploy as they begin: every one but the up without waiting for
// the disk. What resolve hands out and what record writes are rows of the store's database, each
// written Durable by the step itself; the up's machine is outside it. Each Do checks that it
// runs only once its start is as durable as it needs.
func lazySteps(t *testing.T, w *world, store *memStore, failing map[string]error) []Step {
	row := func(name string) Step {
		return Step{Name: name, LazyStart: true, Do: func(context.Context, *Run) (json.RawMessage, error) {
			w.calls = append(w.calls, "do "+name)
			if err := failing[name]; err != nil {
				return nil, err // its transaction rolled back
			}
			if err := store.put(name, true); err != nil {
				return nil, Transient(err)
			}
			return nil, nil
		}}
	}
	pure := func(name string) Step {
		return Step{Name: name, LazyStart: true, Do: func(context.Context, *Run) (json.RawMessage, error) {
			w.calls = append(w.calls, "do "+name)
			return json.RawMessage(`"` + name + ` result"`), failing[name]
		}}
	}
	resolve := row("resolve")
	resolve.Undo = func(context.Context, *Run) error {
		w.calls = append(w.calls, "undo resolve")
		return store.put("resolve", false)
	}
	up := Step{Name: "up",
		Do: func(_ context.Context, r *Run) (json.RawMessage, error) {
			w.calls = append(w.calls, "do up")
			if r.Interrupted("up") {
				w.interrupted = append(w.interrupted, "up")
			}
			for _, before := range []string{"resolve", "govern", "preview"} {
				if got := store.durable[before].Status; got != Done {
					t.Errorf("up ran with %s %s on disk, want done", before, got)
				}
			}
			if got := store.durable["up"].Status; got != Running {
				t.Errorf("up ran with its start %s on disk, want running", got)
			}
			w.effects["up"] = true
			return json.RawMessage(`"up result"`), failing["up"]
		},
		Undo: func(context.Context, *Run) error {
			w.calls = append(w.calls, "undo up")
			delete(w.effects, "up")
			return nil
		}}
	return []Step{resolve, pure("govern"), pure("preview"), up, row("record")}
}
