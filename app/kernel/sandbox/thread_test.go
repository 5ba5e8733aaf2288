package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// kept counts the confined threads s keeps for commands to come.
func kept(s Sandbox) int {
	s.kept.mu.Lock()
	defer s.kept.mu.Unlock()
	return len(s.kept.list)
}

// stacks are two stacks' directories, the other's holding a secret in canary.
func stacks(t *testing.T) (own, other, canary string) {
	t.Helper()
	own, other = t.TempDir(), t.TempDir()
	canary = filepath.Join(other, "canary")
	if err := os.WriteFile(canary, []byte("the other stack's secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	return own, other, canary
}

// A thread confined ahead of its command, or kept after one, starts the next command under
// the same policy, confined as a new thread would be.
func TestThreads_APolicysThreadStartsItsNextCommands(t *testing.T) {
	if ABI() == 0 {
		t.Fatal("this kernel has no Landlock; the sandbox cannot be tested here")
	}
	s := New(Required, System())
	own, _, canary := stacks(t)
	s.Prepare(Policy{Write: []string{own}, Exec: shell})
	s.Prepare(Policy{Write: []string{own}, Exec: shell}) // one thread a policy
	if n := kept(s); n != 1 {
		t.Fatalf("%d threads prepared, want 1", n)
	}
	for range 3 {
		if out, err := run(t, s, Policy{Write: []string{own}}, "echo mine > "+own+"/f && cat "+own+"/f"); err != nil || out != "mine" {
			t.Fatalf("own directory: %q, %v", out, err)
		}
		if out, err := run(t, s, Policy{Write: []string{own}}, "cat "+canary); err == nil || strings.Contains(out, "secret") {
			t.Fatalf("a kept thread's command read another stack's file: %q", out)
		}
		if n := kept(s); n != 1 {
			t.Fatalf("%d threads kept after the commands of one policy, want 1", n)
		}
	}
}

func TestThreads_AnotherPolicyGetsAThreadOfItsOwn(t *testing.T) {
	if ABI() == 0 {
		t.Fatal("this kernel has no Landlock; the sandbox cannot be tested here")
	}
	s := New(Required, System())
	own, other, canary := stacks(t)
	// Prepared for the other stack: a command of this one must not run in its thread.
	s.Prepare(Policy{Write: []string{other}, Exec: shell})
	if out, err := run(t, s, Policy{Write: []string{own}}, "cat "+canary); err == nil || strings.Contains(out, "secret") {
		t.Fatalf("ran in the thread prepared for another directory: %q", out)
	}
	if n := kept(s); n != 2 {
		t.Fatalf("%d threads kept, want the other stack's still waiting and this one's", n)
	}
}

// Landlock holds a directory's rule by the directory it found: one removed and made again is
// out of a confined thread's reach, so Start confines a new thread rather than fail.
func TestThreads_ADirectoryMadeAgainIsAnotherPolicy(t *testing.T) {
	if ABI() == 0 {
		t.Fatal("this kernel has no Landlock; the sandbox cannot be tested here")
	}
	s := New(Required, System())
	own := filepath.Join(t.TempDir(), "stack")
	if err := os.Mkdir(own, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, s, Policy{Write: []string{own}}, ":"); err != nil {
		t.Fatalf("own directory: %q, %v", out, err)
	}
	// Made again in one move, so that the path is never missing, and with the old one held
	// open, so that the new one cannot be given its number.
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
	if n := kept(s); n != 2 {
		t.Fatalf("%d threads kept, want the old directory's left alone and the new one's", n)
	}
}
