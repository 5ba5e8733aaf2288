package pulumix

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A credential given as a file is the run's alone: written where only the engine reads it, in
// memory, named by its variable, in no setting, and gone when the run ends.
func TestStack_FilesAreTheRunsOwnInMemory(t *testing.T) {
	memory := t.TempDir()
	before := memoryDir
	memoryDir = memory
	t.Cleanup(func() { memoryDir = before })
	r, data, _ := stackRunner(t, "file")
	st := machineStack(t, "d-files", map[string]any{"name": "m"})
	st.Files = map[string][]byte{"KUBECONFIG": []byte("token: canary-of-the-run")}

	ws, err := r.open(t.Context(), st, create)
	if err != nil {
		t.Fatal(err)
	}
	var file string
	for _, kv := range ws.env {
		if v, ok := strings.CutPrefix(kv, "KUBECONFIG="); ok {
			file = v
		}
	}
	if filepath.Dir(file) != ws.tmp || !strings.HasPrefix(ws.tmp, memory) {
		t.Fatalf("KUBECONFIG=%q, want a file in the run's directory in memory (%s)", file, memory)
	}
	info, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(file); string(got) != "token: canary-of-the-run" || info.Mode().Perm() != 0o600 {
		t.Fatalf("the file holds %q with mode %v", got, info.Mode().Perm())
	}
	settings, err := os.ReadFile(filepath.Join(data, "stacks", st.Name, "Pulumi."+st.Name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(settings), "canary") || strings.Contains(string(settings), "KUBECONFIG") {
		t.Fatalf("the settings hold the file: %s", settings)
	}
	ws.close()
	if _, err := os.Stat(ws.tmp); !os.IsNotExist(err) {
		t.Fatalf("the run's directory outlived it: %v", err)
	}
}
