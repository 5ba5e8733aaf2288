package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// prepared counts the threads s holds confined for commands still to come.
func prepared(s Sandbox) int {
	s.prepared.mu.Lock()
	defer s.prepared.mu.Unlock()
	return len(s.prepared.list)
}

func TestPrepare_StartTakesTheThreadItConfined(t *testing.T) {
	if ABI() == 0 {
		t.Fatal("this kernel has no Landlock; the sandbox cannot be tested here")
	}
	s := New(Required, System())
	own, other := t.TempDir(), t.TempDir()
	canary := filepath.Join(other, "canary")
	if err := os.WriteFile(canary, []byte("the other stack's secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.Prepare(Policy{Write: []string{own}, Exec: shell})
	if n := prepared(s); n != 1 {
		t.Fatalf("%d threads prepared, want 1", n)
	}
	if out, err := run(t, s, Policy{Write: []string{own}}, "echo mine > "+own+"/f && cat "+own+"/f"); err != nil || out != "mine" {
		t.Fatalf("own directory: %q, %v", out, err)
	}
	if n := prepared(s); n != 0 {
		t.Fatalf("the prepared thread was not taken: %d left", n)
	}
	// The thread Start took was confined as one of its own would be.
	s.Prepare(Policy{Write: []string{own}, Exec: shell})
	if out, err := run(t, s, Policy{Write: []string{own}}, "cat "+canary); err == nil || strings.Contains(out, "secret") {
		t.Fatalf("a prepared thread's command read another stack's file: %q", out)
	}
	if n := prepared(s); n != 0 {
		t.Fatalf("the prepared thread was not taken: %d left", n)
	}
}

func TestPrepare_AnotherPolicyGetsAThreadOfItsOwn(t *testing.T) {
	if ABI() == 0 {
		t.Fatal("this kernel has no Landlock; the sandbox cannot be tested here")
	}
	s := New(Required, System())
	own, other := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "canary"), []byte("the other stack's secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Prepared for the other stack: a command of this one must not run in its thread.
	s.Prepare(Policy{Write: []string{other}, Exec: shell})
	if out, err := run(t, s, Policy{Write: []string{own}}, "cat "+other+"/canary"); err == nil || strings.Contains(out, "secret") {
		t.Fatalf("ran in the thread prepared for another directory: %q", out)
	}
	if n := prepared(s); n != 1 {
		t.Fatalf("%d threads prepared, want the other stack's still waiting", n)
	}
}

// Landlock holds a directory's rule by the directory it found: one removed and made again is
// out of a prepared thread's reach, so Start confines a new thread rather than fail.
func TestPrepare_ADirectoryMadeAgainIsAnotherPolicy(t *testing.T) {
	if ABI() == 0 {
		t.Fatal("this kernel has no Landlock; the sandbox cannot be tested here")
	}
	s := New(Required, System())
	own := filepath.Join(t.TempDir(), "stack")
	if err := os.Mkdir(own, 0o700); err != nil {
		t.Fatal(err)
	}
	s.Prepare(Policy{Write: []string{own}, Exec: shell})
	// Made again in one move, so that the path is never missing (a thread confined meanwhile
	// would fail and be let go), and with the old one held open, so that the new one cannot be
	// given its number.
	old, err := os.Open(own)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	again := own + ".new"
	if err := os.Mkdir(again, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Rename(again, own); err != nil { // os.Rename refuses to replace a directory
		t.Fatal(err)
	}
	if out, err := run(t, s, Policy{Write: []string{own}}, "echo mine > "+own+"/f && cat "+own+"/f"); err != nil || out != "mine" {
		t.Fatalf("the directory made again: %q, %v", out, err)
	}
	if n := prepared(s); n != 1 {
		t.Fatalf("%d threads prepared, want the stale one left alone", n)
	}
}
