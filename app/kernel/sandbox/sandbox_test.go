package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// required confines commands as NIMBUS_SANDBOX=required does.
var required = New(Required, System())

// shell is what a test's scripts need to execute: the shell, the programs they run and the
// dynamic loader these need, where the engine executes nothing but its own static binaries.
var shell = []string{"/bin/sh", "/lib64/ld-linux-x86-64.so.2", "/usr/bin/cat", "/usr/bin/ls", "/usr/bin/mkdir", "/usr/bin/mv", "/usr/bin/ln"}

// run runs script in /bin/sh under s and p, p granting the shell and its programs.
func run(t *testing.T, s Sandbox, p Policy, script string) (string, error) {
	t.Helper()
	p.Exec = append(p.Exec, shell...)
	var out strings.Builder
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := s.Start(cmd, p); err != nil {
		t.Fatalf("start %q: %v", script, err)
	}
	err := cmd.Wait()
	return strings.TrimSpace(out.String()), err
}

func TestSandbox_ReachesOnlyItsOwnDirectories(t *testing.T) {
	if ABI() == 0 {
		t.Fatal("this kernel has no Landlock; the sandbox cannot be tested here")
	}
	own, other := t.TempDir(), t.TempDir()
	canary := filepath.Join(other, "canary")
	if err := os.WriteFile(canary, []byte("the other stack's secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	l := required
	p := Policy{Write: []string{own}}

	if out, err := run(t, l, p, "echo mine > "+own+"/f && cat "+own+"/f && mkdir "+own+"/d && mv "+own+"/f "+own+"/d/g"); err != nil || out != "mine" {
		t.Fatalf("own directory: %q, %v", out, err)
	}
	for _, script := range []string{
		"ln -s " + other + " " + own + "/elsewhere", // a link Nimbus would follow into another directory
		"cat " + canary,
		"ls " + other,
		"echo x > " + other + "/new",
		"cat /proc/1/environ",
		"cat /etc/shadow",
	} {
		if out, err := run(t, l, p, script); err == nil || strings.Contains(out, "secret") {
			t.Errorf("%s: allowed (%q)", script, out)
		}
	}
	// Without the sandbox, the same command reads the canary: the refusals above are Landlock's.
	if out, err := run(t, Sandbox{Mode: Off}, p, "cat "+canary); err != nil || !strings.Contains(out, "secret") {
		t.Fatalf("unconfined: %q, %v", out, err)
	}
}

func TestSandbox_SetsLimits(t *testing.T) {
	// They are set once the command runs: this one waits to be told it has.
	var got strings.Builder
	cmd := exec.Command("/bin/sh", "-c", "read go; ulimit -n; ulimit -t; ulimit -c")
	cmd.Stdout = &got
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := required.Start(cmd, Policy{Exec: shell, Limits: Limits{OpenFiles: 321, CPUSeconds: 66}}); err != nil {
		t.Fatal(err)
	}
	_, _ = in.Write([]byte("go\n"))
	in.Close()
	if err := cmd.Wait(); err != nil || strings.TrimSpace(got.String()) != "321\n66\n0" {
		t.Fatalf("limits: %q, %v", got.String(), err)
	}
}

func TestSandbox_CannotSignalOutside(t *testing.T) {
	if ABI() < 6 {
		t.Fatalf("signal scoping needs Landlock ABI 6; this kernel has %d", ABI())
	}
	out, err := run(t, required, Policy{}, "kill -0 "+strconv.Itoa(os.Getpid()))
	if err == nil {
		t.Fatalf("signalled its parent: %q", out)
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"": Auto, "auto": Auto, "Required": Required, "off": Off} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("%q: %v, %v", in, got, err)
		}
	}
	if _, err := ParseMode("sometimes"); err == nil {
		t.Error("sometimes accepted")
	}
}

// The restriction stays with the engine: the program that started it reaches what it did.
func TestStart_LeavesTheCallerUnconfined(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(outside, []byte("still mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if out, err := run(t, required, Policy{}, "cat "+outside); err == nil {
			t.Fatalf("a confined command read %s: %q", outside, out)
		}
		if b, err := os.ReadFile(outside); err != nil || string(b) != "still mine" {
			t.Fatalf("the caller lost its reach: %v", err)
		}
	}
}

// A confined process executes only what its policy names: no other program on the system, and
// nothing in a directory it may write, not even a copy of a program it may run.
func TestSandbox_ExecutesOnlyWhatItIsGiven(t *testing.T) {
	if ABI() == 0 {
		t.Fatal("this kernel has no Landlock; the sandbox cannot be tested here")
	}
	own := t.TempDir()
	cat, err := os.ReadFile("/usr/bin/cat")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(own, "cat"), cat, 0o755); err != nil {
		t.Fatal(err)
	}
	p := Policy{Write: []string{own}}
	if out, err := run(t, required, p, "cat /etc/hosts >/dev/null && echo ran"); err != nil || out != "ran" {
		t.Fatalf("a program it was given: %q, %v", out, err)
	}
	for _, script := range []string{
		"/usr/bin/id",
		"/usr/bin/env true",
		own + "/cat /etc/hosts",
	} {
		out, err := run(t, required, p, script)
		if err == nil || !strings.Contains(strings.ToLower(out), "permission denied") && !strings.Contains(out, "not found") {
			t.Errorf("%s: ran (%q, %v)", script, out, err)
		}
	}
	// Unconfined, the same commands run: the refusals are the sandbox's.
	if out, err := run(t, Sandbox{Mode: Off}, p, "/usr/bin/id -u && "+own+"/cat /etc/hosts >/dev/null"); err != nil || out == "" {
		t.Fatalf("unconfined: %q, %v", out, err)
	}
}

// Started by root, a confined command runs as the account it is given, with its limits set:
// the thread that starts it becomes the account, and the caller stays root.
func TestSandbox_RunsAsItsAccount(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root can start a command as another account") // the server then runs the engine as itself
	}
	s := New(Required, System())
	s.Account = &syscall.Credential{Uid: 4242, Gid: 4242}
	var got strings.Builder
	cmd := exec.Command("/bin/sh", "-c", "read go; id -u; id -g; id -G; ulimit -n")
	cmd.Stdout = &got
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(cmd, Policy{Exec: append(shell, "/usr/bin/id"), Limits: Limits{OpenFiles: 99}}); err != nil {
		t.Fatal(err)
	}
	_, _ = in.Write([]byte("go\n"))
	in.Close()
	if err := cmd.Wait(); err != nil || strings.TrimSpace(got.String()) != "4242\n4242\n4242\n99" {
		t.Fatalf("as the account: %q, %v", got.String(), err)
	}
	if os.Geteuid() != 0 || os.Getuid() != 0 {
		t.Fatal("the caller lost root")
	}
}
