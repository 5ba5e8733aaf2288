package pulumix

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// setStored changes a property of every stored resource of a kind in the cloud, by hand.
func setStored(t *testing.T, cloud, kind, property string, value any) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(cloud, kind, "*.json"))
	if len(files) != 1 {
		t.Fatalf("%s in the cloud: %v", kind, files)
	}
	raw, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	m[property] = value
	raw, _ = json.Marshal(m)
	if err := os.WriteFile(files[0], raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDriftCheck_FindsWhatChangedAndWhatIsGoneAndRefreshingPutsItBack(t *testing.T) {
	data, cloud := t.TempDir(), t.TempDir()
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
	st := Stack{Name: "drift", Code: string(code), Config: map[string]any{"name": "web", "cores": float64(2)}, Passphrase: "p"}
	if _, err := r.Up(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	check := func() (Result, *recorder) {
		t.Helper()
		rec := &recorder{}
		res, err := r.DriftCheck(ctx, st, rec)
		if err != nil {
			t.Fatalf("drift check: %v\n%s", err, rec.String())
		}
		return res, rec
	}
	if res, _ := check(); len(res.Drift) != 0 {
		t.Fatalf("drift right after the up: %+v", res.Drift)
	}

	setStored(t, cloud, "machine", "cores", 4)
	res, rec := check()
	if len(res.Drift) != 1 || res.Drift[0].Name != "machine" || res.Drift[0].Op != "update" || len(res.Drift[0].Changes) != 1 {
		t.Fatalf("the drift: %+v", res.Drift)
	}
	if c := res.Drift[0].Changes[0]; c.Path != "cores" || c.Old != float64(2) || c.New != float64(4) {
		t.Fatalf("the machine's change: %+v, want cores 2 → 4", c)
	}
	if e, ok := rec.find("machine", "done"); !ok || e.Op != "update" || len(e.Changes) != 1 {
		t.Fatalf("the check's events: %+v", rec.events)
	}
	if e, ok := rec.find("disk", "done"); !ok || e.Op != "same" {
		t.Fatalf("the disk, unchanged: %+v", rec.events)
	}

	// A preview of an ordinary change still plans, and finds no drift of its own.
	change := st
	change.Config = map[string]any{"name": "web", "cores": float64(3)}
	preview := &recorder{}
	pres, err := r.Preview(ctx, change, preview)
	if err != nil || len(pres.Drift) != 0 {
		t.Fatalf("preview: %v, drift %+v", err, pres.Drift)
	}
	if e, ok := preview.find("machine", "planned"); !ok || e.Op != "update" {
		t.Fatalf("the preview's plan: %+v", preview.events)
	}

	// A preview that refreshes first finds the same drift, and plans to put it back.
	refreshing := st
	refreshing.Refresh = true
	preview = &recorder{}
	if pres, err = r.Preview(ctx, refreshing, preview); err != nil {
		t.Fatalf("preview --refresh: %v\n%s", err, preview.String())
	}
	if len(pres.Drift) != 1 || len(pres.Drift[0].Changes) != 1 || pres.Drift[0].Changes[0].New != float64(4) {
		t.Fatalf("the drift a refreshing preview found: %+v", pres.Drift)
	}
	var last Event
	for _, e := range preview.events {
		if e.Name == "machine" {
			last = e
		}
	}
	if last.Status != "planned" || last.Op != "update" || last.Changes[0].Old != float64(4) || last.Changes[0].New != float64(2) {
		t.Fatalf("the refreshing preview's plan ends with %+v, want the machine's cores put back from 4 to 2", last)
	}

	// Up with Refresh reads the machine back and puts its cores back.
	st.Refresh = true
	if _, err := r.Up(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	st.Refresh = false
	if res, _ := check(); len(res.Drift) != 0 {
		t.Fatalf("drift after an up that refreshed first: %+v", res.Drift)
	}

	// A resource deleted by hand is found gone.
	disks, _ := filepath.Glob(filepath.Join(cloud, "disk", "*.json"))
	if err := os.Remove(disks[0]); err != nil {
		t.Fatal(err)
	}
	if res, _ := check(); len(res.Drift) != 1 || res.Drift[0].Name != "disk" || res.Drift[0].Op != "delete" {
		t.Fatalf("the drift of a deleted disk: %+v", res.Drift)
	}
}

// TestDriftCheck_APowerStateChangedByHandIsDrift: the engine diffs only inputs, so a machine
// stopped outside any deployment reads back as the same resource; what the provider reports
// beside the inputs is compared too.
func TestDriftCheck_APowerStateChangedByHandIsDrift(t *testing.T) {
	data, cloud := t.TempDir(), t.TempDir()
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
	st := Stack{Name: "power", Code: string(code), Config: map[string]any{"name": "web", "cores": float64(2)}, Passphrase: "p"}
	if _, err := r.Up(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	setStored(t, cloud, "machine", "status", "stopped")
	res, err := r.DriftCheck(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Drift) != 1 || res.Drift[0].Name != "machine" || len(res.Drift[0].Changes) != 1 {
		t.Fatalf("the drift of a stopped machine: %+v", res.Drift)
	}
	if c := res.Drift[0].Changes[0]; c.Path != "status" || c.Old != "running" || c.New != "stopped" {
		t.Fatalf("the machine's change: %+v, want status running → stopped", c)
	}
}
