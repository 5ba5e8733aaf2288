package pulumix

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestAdopt_TheUpChangesWhatWasImported imports a machine made outside the stack under the
// program's name for it: the up that follows makes the rest and updates the machine in place,
// rather than making another; forgotten, the machine leaves the state and stays in the cloud.
func TestAdopt_TheUpChangesWhatWasImported(t *testing.T) {
	r, _, cloud := stackRunner(t, "file")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := os.MkdirAll(filepath.Join(cloud, "machine"), 0o755); err != nil {
		t.Fatal(err)
	}
	made, _ := json.Marshal(map[string]any{"id": "m-0a0b0c0d", "name": "legacy", "image": "debian-12", "cores": 2, "memoryMb": 2048, "ip": "10.0.0.9", "status": "running"})
	if err := os.WriteFile(filepath.Join(cloud, "machine", "m-0a0b0c0d.json"), made, 0o644); err != nil {
		t.Fatal(err)
	}
	st := machineStack(t, "adopting", map[string]any{"name": "legacy"})
	a := Adopted{Type: "simcloud:index:Machine", Name: "machine", ID: "m-0a0b0c0d"}
	st.Exclusive = true
	if err := r.Forget(ctx, st, a); err != nil {
		t.Fatalf("forget before the stack is: %v", err)
	}
	var log bytes.Buffer
	if err := r.Adopt(ctx, st, a, &log); err != nil {
		t.Fatalf("adopt: %v\n%s", err, log.String())
	}
	res, err := r.Preview(ctx, st, nil)
	if err != nil {
		t.Fatalf("preview: %v", err)
	}
	for _, p := range res.Planned {
		if p.URN == a.URN(st.Name) && p.Op != "update" {
			t.Fatalf("the adopted machine is planned %s, want an update (it gains its disk)", p.Op)
		}
	}
	up, err := r.Up(ctx, st, nil)
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	if up.Changes["update"] != 1 || up.Changes["create"] != 1 {
		t.Fatalf("the up changed %v, want the disk made and the machine updated", up.Changes)
	}
	if machines := cloudFiles(t, cloud, "machine"); len(machines) != 1 {
		t.Fatalf("the cloud holds machines %v, want the adopted one alone", machines)
	}
	if err := r.Forget(ctx, st, a); err != nil {
		t.Fatalf("forget: %v", err)
	}
	if err := r.Forget(ctx, st, a); err != nil {
		t.Fatalf("forget again: %v", err)
	}
	if _, err := r.Destroy(ctx, st, nil); err != nil {
		t.Fatalf("destroy: %v", err)
	}
	if machines := cloudFiles(t, cloud, "machine"); len(machines) != 1 {
		t.Fatalf("forgotten, then the stack destroyed, the cloud holds machines %v, want the adopted one still", machines)
	}
}
