package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// required confines commands as NIMBUS_SANDBOX=required does.
var required = New(Required, System())

func run(t *testing.T, s Sandbox, p Policy, script string) (string, error) {
	t.Helper()
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
	out, err := run(t, required, Policy{Limits: Limits{OpenFiles: 123, CPUSeconds: 77}}, "ulimit -n; ulimit -t; ulimit -c")
	if err != nil || out != "123\n77\n0" {
		t.Fatalf("limits: %q, %v", out, err)
	}
	// Without prlimit they are set once the command runs: this one waits to be told it has.
	noPrlimit := Sandbox{Mode: Required, Base: System()}
	var got strings.Builder
	cmd := exec.Command("/bin/sh", "-c", "read go; ulimit -n; ulimit -t")
	cmd.Stdout = &got
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := noPrlimit.Start(cmd, Policy{Limits: Limits{OpenFiles: 321, CPUSeconds: 66}}); err != nil {
		t.Fatal(err)
	}
	_, _ = in.Write([]byte("go\n"))
	in.Close()
	if err := cmd.Wait(); err != nil || strings.TrimSpace(got.String()) != "321\n66" {
		t.Fatalf("limits without prlimit: %q, %v", got.String(), err)
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
