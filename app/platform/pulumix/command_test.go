package pulumix

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"nimbus/app/kernel/sandbox"
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

// cancelOnLine is a stdout writer that calls cancel once the output holds line: a stand-in
// says so when it is ready to be interrupted. Read done only after Run has returned.
type cancelOnLine struct {
	line   string
	cancel func()
	seen   strings.Builder
	done   bool
}

func (w *cancelOnLine) Write(p []byte) (int, error) {
	if !w.done {
		w.seen.Write(p)
		if strings.Contains(w.seen.String(), w.line+"\n") {
			w.done = true
			w.cancel()
		}
	}
	return len(p), nil
}

// interruptWhen returns a context to run a stand-in with, and the writer for its stdout that
// cancels the context once the stand-in prints line. A minute without it cancels it anyway,
// and the test then fails saying so.
func interruptWhen(t *testing.T, line string) (context.Context, *cancelOnLine) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx, &cancelOnLine{line: line, cancel: cancel}
}

func (w *cancelOnLine) requireSeen(t *testing.T) {
	t.Helper()
	if !w.done {
		t.Fatalf("the stand-in never printed %q: it was not interrupted where the test means", w.line)
	}
}

func TestCommand_KeepsNimbusSecretsFromTheEngine(t *testing.T) {
	t.Setenv("NIMBUS_SECRET_KEY", "canary-key")
	t.Setenv("NIMBUS_DATABASE_URL", "postgres://canary")
	cmd, err := newCommand(fakeCLI(t, "env"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	out, _, p, err := cmd.Run(context.Background(), t.TempDir(), sandbox.Policy{}, nil, nil, nil, []string{"PULUMI_HOME=/x"}, "preview")
	if err != nil || p.code != 0 {
		t.Fatalf("run: %v %d", err, p.code)
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
	// It is interrupted once it says its trap is set.
	cmd, err := newCommand(fakeCLI(t, `trap 'echo interrupted; exit 3' INT; echo trapped; while :; do sleep 0.05; done`), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctx, ready := interruptWhen(t, "trapped")
	out, _, p, _ := cmd.Run(ctx, t.TempDir(), sandbox.Policy{}, nil, []io.Writer{ready}, nil, nil, "up")
	ready.requireSeen(t)
	if p.code != 3 || !strings.Contains(out, "interrupted") {
		t.Fatalf("exit %d, output %q: want a graceful stop on SIGINT", p.code, out)
	}
}

func TestCommand_StubbornEngineIsKilledWithItsChildren(t *testing.T) {
	// Ignores SIGINT, and starts a child in a process group of its own, as plugins are.
	// It is interrupted once it says both are so.
	body := `trap '' INT; setsid sleep 300 & echo $! > "$PWD/child"; echo ready; while :; do sleep 0.05; done`
	cmd, err := newCommand(fakeCLI(t, body), 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx, ready := interruptWhen(t, "ready")
	start := time.Now()
	_, _, _, _ = cmd.Run(ctx, dir, sandbox.Policy{}, nil, []io.Writer{ready}, nil, nil, "up")
	ready.requireSeen(t)
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
	// The stand-in is a script: it needs its shell, the programs it runs and their loader,
	// where the engine needs nothing but its own static binaries.
	base.Exec = []string{cmd.path, "/bin/sh", "/usr/bin/cat", "/usr/bin/ls", "/lib64/ld-linux-x86-64.so.2"}
	env := []string{"HOME=" + home, "PULUMI_BACKEND_URL=file://" + state}

	cmd.sandbox = sandbox.New(sandbox.Required, base)
	out, stderr, p, err := cmd.Run(context.Background(), work, sandbox.Policy{}, nil, nil, nil, env, outside)
	if err != nil || p.code != 0 {
		t.Fatalf("confined run: %v %d %s", err, p.code, stderr)
	}
	if strings.Contains(out, "secret") || !strings.Contains(out, "Permission denied") || !strings.Contains(out, "state-readable") {
		t.Fatalf("confined run said %q: want the canary refused and its own directories usable", out)
	}
	// The same command unconfined reads it: the refusal above is the sandbox's.
	cmd.sandbox = sandbox.Sandbox{}
	if out, _, _, _ := cmd.Run(context.Background(), work, sandbox.Policy{}, nil, nil, nil, env, outside); !strings.Contains(out, "secret") {
		t.Fatalf("unconfined run said %q", out)
	}
}
