package pulumix

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"nimbus/app/sandbox"
)

// fakeCLI writes a stand-in pulumi that prints its version, or its environment when run.
func fakeCLI(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pulumi")
	script := "#!/bin/sh\nif [ \"$1\" = version ]; then echo v3.274.1; exit 0; fi\n" + body + "\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCommand_KeepsNimbusSecretsFromTheEngine(t *testing.T) {
	t.Setenv("NIMBUS_SECRET_KEY", "canary-key")
	t.Setenv("NIMBUS_DATABASE_URL", "postgres://canary")
	cmd, err := newCommand(fakeCLI(t, "env"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if cmd.Version().String() != "3.274.1" {
		t.Fatalf("version %s", cmd.Version())
	}
	out, _, code, err := cmd.Run(context.Background(), t.TempDir(), nil, nil, nil, []string{"PULUMI_HOME=/x"}, "preview")
	if err != nil || code != 0 {
		t.Fatalf("run: %v %d", err, code)
	}
	if strings.Contains(out, "canary") {
		t.Fatalf("Nimbus's secrets reached the engine:\n%s", out)
	}
	// Only what is passed on purpose, and what the shell printing it adds.
	allowed := append([]string{"PULUMI_HOME", "PULUMI_AUTOMATION_API", "PWD", "SHLVL", "_"}, passedEnv...)
	for _, kv := range strings.Split(strings.TrimSpace(out), "\n") {
		if k, _, _ := strings.Cut(kv, "="); !slices.Contains(allowed, k) {
			t.Errorf("the engine was given %s, which it does not need", k)
		}
	}
	for _, want := range []string{"PULUMI_HOME=/x", "PATH=", "PULUMI_AUTOMATION_API=true"} {
		if !strings.Contains(out, want) {
			t.Errorf("the engine lacks %s", want)
		}
	}
}

func TestCommand_CancelInterruptsGracefully(t *testing.T) {
	// The stand-in leaves cleanly on SIGINT, as the engine does after unlocking its stack.
	cmd, err := newCommand(fakeCLI(t, `trap 'echo interrupted; exit 3' INT; while :; do sleep 0.05; done`), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	out, _, code, _ := cmd.Run(ctx, t.TempDir(), nil, nil, nil, nil, "up")
	if code != 3 || !strings.Contains(out, "interrupted") {
		t.Fatalf("exit %d, output %q: want a graceful stop on SIGINT", code, out)
	}
}

func TestCommand_StubbornEngineIsKilledWithItsChildren(t *testing.T) {
	// Ignores SIGINT, and starts a child in a process group of its own, as plugins are.
	body := `trap '' INT; setsid sleep 300 & echo $! > "$PWD/child"; while :; do sleep 0.05; done`
	cmd, err := newCommand(fakeCLI(t, body), 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, _, _ = cmd.Run(ctx, dir, nil, nil, nil, nil, "up")
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("a stubborn engine ran on for %s", took)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "child"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); strings.Contains(string(stat), ") Z ") {
			break // dead, waiting for init to reap it
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatal("the engine's child outlived it")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A confined engine reaches its working directory and the directories its environment names,
// and nothing else of the machine's files beyond the system's.
func TestCommand_ConfinedToItsStack(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "canary")
	if err := os.WriteFile(outside, []byte("another stack's secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	work, state, home := t.TempDir(), t.TempDir(), t.TempDir()
	script := `cat "$2" 2>&1; echo written > "$PWD/w" && echo written > "$HOME/h" && ls "` + state + `" >/dev/null && echo state-readable`
	cmd, err := newCommand(fakeCLI(t, script), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	base := sandbox.System()
	base.Read = append(base.Read, filepath.Dir(cmd.path))
	env := []string{"HOME=" + home, "PULUMI_BACKEND_URL=file://" + state}

	cmd.sandbox = sandbox.New(sandbox.Required, base)
	out, stderr, code, err := cmd.Run(context.Background(), work, nil, nil, nil, env, outside)
	if err != nil || code != 0 {
		t.Fatalf("confined run: %v %d %s", err, code, stderr)
	}
	if strings.Contains(out, "secret") || !strings.Contains(out, "Permission denied") || !strings.Contains(out, "state-readable") {
		t.Fatalf("confined run said %q: want the canary refused and its own directories usable", out)
	}
	// The same command unconfined reads it: the refusal above is the sandbox's.
	cmd.sandbox = sandbox.Sandbox{}
	if out, _, _, _ := cmd.Run(context.Background(), work, nil, nil, nil, env, outside); !strings.Contains(out, "secret") {
		t.Fatalf("unconfined run said %q", out)
	}
}
