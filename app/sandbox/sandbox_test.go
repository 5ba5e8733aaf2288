package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	LaunchIfAsked()
	os.Exit(m.Run())
}

// launcher confines commands with this test binary, as nimbus does with itself.
func launcher(t *testing.T) Launcher {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Launcher{Self: self, Mode: Required, Base: System()}
}

func run(t *testing.T, l Launcher, p Policy, script string) (string, error) {
	t.Helper()
	name, args := l.Wrap(p, "/bin/sh", "-c", script)
	out, err := exec.Command(name, args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func TestLauncher_ReachesOnlyItsOwnDirectories(t *testing.T) {
	if ABI() == 0 {
		t.Fatal("this kernel has no Landlock; the sandbox cannot be tested here")
	}
	own, other := t.TempDir(), t.TempDir()
	canary := filepath.Join(other, "canary")
	if err := os.WriteFile(canary, []byte("the other stack's secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	l := launcher(t)
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
	if out, err := run(t, Launcher{Mode: Off}, p, "cat "+canary); err != nil || !strings.Contains(out, "secret") {
		t.Fatalf("unconfined: %q, %v", out, err)
	}
}

func TestLauncher_SetsLimits(t *testing.T) {
	l := launcher(t)
	out, err := run(t, l, Policy{Limits: Limits{OpenFiles: 123, CPUSeconds: 77}}, "ulimit -n; ulimit -t")
	if err != nil || out != "123\n77" {
		t.Fatalf("limits: %q, %v", out, err)
	}
}

func TestLauncher_CannotSignalOutside(t *testing.T) {
	if ABI() < 6 {
		t.Fatalf("signal scoping needs Landlock ABI 6; this kernel has %d", ABI())
	}
	out, err := run(t, launcher(t), Policy{}, "kill -0 "+strconv.Itoa(os.Getpid()))
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
