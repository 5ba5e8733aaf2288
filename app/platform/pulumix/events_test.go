package pulumix

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is a progress writer that also takes the engine's events.
type recorder struct {
	strings.Builder
	mu     sync.Mutex
	events []Event
}

func (r *recorder) Event(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) find(name string, status ResourceStatus) (Event, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.events {
		if e.Name == name && e.Status == status {
			return e, true
		}
	}
	return Event{}, false
}

func TestEvents_PlanProgressAndChangedProperties(t *testing.T) {
	data := t.TempDir()
	cloud := t.TempDir()
	r, err := NewRunner(toolchain(t), data, map[string]string{"SIMCLOUD_DIR": cloud}, CloudDirs(cloud))
	if err != nil {
		t.Fatal(err)
	}
	code, err := os.ReadFile("../../domain/component/testdata/machine.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	st := Stack{Name: "events", Code: string(code), Config: map[string]any{"name": "web", "cores": float64(2)}, Passphrase: "p"}

	preview := &recorder{}
	if _, err := r.Preview(ctx, st, preview); err != nil {
		t.Fatalf("preview: %v\n%s", err, preview.String())
	}
	if e, ok := preview.find("machine", "planned"); !ok || e.Op != "create" || !strings.HasSuffix(e.Type, "Machine") {
		t.Fatalf("preview planned no machine create: %+v", preview.events)
	}

	up := &recorder{}
	if _, err := r.Up(ctx, st, up); err != nil {
		t.Fatalf("up: %v\n%s", err, up.String())
	}
	running, ok := up.find("machine", "running")
	done, ok2 := up.find("machine", "done")
	if !ok || !ok2 || done.At.Before(running.At) {
		t.Fatalf("up did not report the machine running then done: %+v", up.events)
	}

	st.Config["cores"] = float64(4)
	change := &recorder{}
	if _, err := r.Preview(ctx, st, change); err != nil {
		t.Fatalf("preview of the change: %v\n%s", err, change.String())
	}
	e, ok := change.find("machine", "planned")
	if !ok || e.Op != "update" || len(e.Changes) != 1 || e.Changes[0].Path != "cores" {
		t.Fatalf("the change's plan = %+v, want an update of cores", e)
	}
	if e.Changes[0].Old != float64(2) || e.Changes[0].New != float64(4) {
		t.Errorf("cores changes %v → %v, want 2 → 4", e.Changes[0].Old, e.Changes[0].New)
	}
	if _, err := r.Destroy(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
}
