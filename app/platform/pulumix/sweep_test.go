package pulumix

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestSweepMemory_RemovesOnlyEnginesDirectoriesLeftLongAgo(t *testing.T) {
	dir := t.TempDir()
	old, fresh, other := filepath.Join(dir, "nimbus-engine-1"), filepath.Join(dir, "nimbus-engine-2"), filepath.Join(dir, "someone-else")
	for _, d := range []string{old, fresh, other} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "kubeconfig"), []byte("token"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	long := time.Now().Add(-2 * leftFor)
	for _, d := range []string{old, other} {
		if err := os.Chtimes(d, long, long); err != nil {
			t.Fatal(err)
		}
	}
	sweepMemory(dir, time.Now().Add(-leftFor))
	for d, want := range map[string]bool{old: false, fresh: true, other: true} {
		if _, err := os.Stat(d); (err == nil) != want {
			t.Errorf("%s: present %v, want %v", filepath.Base(d), err == nil, want)
		}
	}
}
