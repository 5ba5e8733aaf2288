package pulumix

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/blang/semver"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"nimbus/app/kernel/sandbox"
)

// command runs the pulumi CLI with only the environment the engine
// needs. Programs run inside the engine, so nothing of Nimbus's own — the database URL, the
// master key, the first admin's password — may reach it.
type command struct {
	path string
	// grace is how long an interrupted engine gets to stop cleanly and unlock its stack
	// before it is killed.
	grace time.Duration
	// sandbox confines each run to the directories its own stack uses (see policy).
	sandbox sandbox.Sandbox
}

// passedEnv is what the engine keeps of Nimbus's environment: where programs are, the locale,
// how to reach the network. Its home and temporary directory are its stack's own, set by the
// Runner.
var passedEnv = []string{"PATH", "LANG", "LC_ALL", "TZ", "SSL_CERT_FILE", "SSL_CERT_DIR",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy"}

// engineBaseEnv is passedEnv's share of Nimbus's environment.
func engineBaseEnv() []string {
	var env []string
	for _, k := range passedEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

func newCommand(path string, grace time.Duration) (command, error) {
	version := exec.Command(path, "version")
	version.Env = append(engineBaseEnv(), "PULUMI_SKIP_UPDATE_CHECK=true")
	out, err := version.Output()
	if err != nil {
		return command{}, fmt.Errorf("%s version: %w", path, err)
	}
	// A CLI that starts but does not answer with a version is not one to drive.
	if _, err := semver.ParseTolerant(strings.TrimSpace(string(out))); err != nil {
		return command{}, fmt.Errorf("%s version: %w", path, err)
	}
	return command{path: path, grace: grace}, nil
}

// process is how an engine process went: when it started and exited, and its exit code (-2
// when it never started or was killed without one).
type process struct {
	started, exited time.Time
	code            int
}

// Run runs the CLI non-interactively. Cancelling ctx interrupts the whole process group with
// SIGINT, as Ctrl-C would, and kills it only if it has not stopped within the grace period.
// Beyond its own directories, the run reaches what extra grants: the clouds it may write, the
// ports it may connect to.
func (c command) Run(ctx context.Context, workdir string, extra sandbox.Policy, stdin io.Reader, out, errOut []io.Writer,
	extraEnv []string, args ...string) (string, string, process, error) {
	// The process, exec to exit; only the command is named, never its arguments.
	ctx, span := tracer(ctx).Start(ctx, "pulumi "+args[0], trace.WithAttributes(attribute.String("nimbus.engine.command", args[0])))
	defer span.End()
	if !slices.Contains(args, "--non-interactive") {
		args = append([]string{"--non-interactive"}, args...)
	}
	cmd := exec.CommandContext(ctx, c.path, args...)
	cmd.Dir = workdir
	cmd.Stdin = stdin
	cmd.Env = append(append(engineBaseEnv(), extraEnv...), "PULUMI_AUTOMATION_API=true")
	stdout, stderr := capture(len(out) > 0), capture(true) // bounded: see limit.go
	cmd.Stdout = io.MultiWriter(append(out, stdout)...)
	cmd.Stderr = io.MultiWriter(append(errOut, stderr)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	exited := make(chan struct{})
	defer close(exited)
	cmd.Cancel = func() error {
		pid := cmd.Process.Pid
		go func() {
			select {
			case <-exited:
			case <-time.After(c.grace):
				// Plugins lead process groups of their own: find them before the CLI dies and
				// they are handed to init, so none is left running.
				for _, p := range append(descendants(pid), pid) {
					_ = syscall.Kill(p, syscall.SIGKILL)
				}
			}
		}()
		return syscall.Kill(-pid, syscall.SIGINT)
	}
	cmd.WaitDelay = c.grace + 5*time.Second
	var p process
	err := c.sandbox.Start(cmd, c.policy(workdir, extraEnv).Union(extra))
	if err == nil {
		p.started = time.Now()
		span.AddEvent("started", trace.WithTimestamp(p.started))
		err = cmd.Wait()
		p.exited = time.Now()
	}
	code := -2
	var exit *exec.ExitError
	switch {
	case err == nil:
		code = 0
	case errors.As(err, &exit):
		code = exit.ExitCode()
	}
	span.SetAttributes(attribute.Int("nimbus.engine.exit_code", code))
	if ps := cmd.ProcessState; ps != nil {
		// The CPU the engine spent, its plugins included: what a run costs the machine
		// whatever else runs beside it, where the span's length depends on that.
		span.SetAttributes(attribute.Int64("nimbus.engine.cpu_user_ms", ps.UserTime().Milliseconds()),
			attribute.Int64("nimbus.engine.cpu_system_ms", ps.SystemTime().Milliseconds()))
	}
	if err != nil {
		span.SetStatus(codes.Error, "exit code "+strconv.Itoa(code))
	}
	p.code = code
	return stdout.String(), stderr.String(), p, err
}

// tracer makes the engine's spans in the trace of the span ctx carries: an engine run outside
// one traces nothing.
func tracer(ctx context.Context) trace.Tracer {
	return trace.SpanFromContext(ctx).TracerProvider().Tracer("nimbus/pulumix")
}

// Prepare readies the sandbox of a Run in workdir with extra and extraEnv, about to come.
func (c command) Prepare(workdir string, extra sandbox.Policy, extraEnv []string) {
	c.sandbox.Prepare(c.policy(workdir, extraEnv).Union(extra))
}

// policy is what one run may write: its working directory, and the home, temporary and state
// directories its environment names (the Runner gives each stack its own; its event pipe,
// plans and states to import are in its temporary directory). The environment is the
// Runner's, never a program's.
func (c command) policy(workdir string, env []string) sandbox.Policy {
	p := sandbox.Policy{Write: []string{workdir}}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "HOME", "PULUMI_HOME", "TMPDIR":
			p.Write = append(p.Write, v)
		case "PULUMI_BACKEND_URL":
			if dir, ok := strings.CutPrefix(v, "file://"); ok {
				p.Write = append(p.Write, dir)
			}
		}
	}
	return p
}

// descendants lists pid's children, theirs, and so on: the language host starts providers too.
func descendants(pid int) []int {
	var out []int
	for _, c := range children(pid) {
		out = append(append(out, c), descendants(c)...)
	}
	return out
}

// children lists the processes whose parent is pid.
func children(pid int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []int
	for _, path := range stats {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		// After the command, which is in parentheses: the state, then the parent's pid.
		i := bytes.LastIndexByte(data, ')')
		fields := strings.Fields(string(data[i+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			child, _ := strconv.Atoi(filepath.Base(filepath.Dir(path)))
			out = append(out, child)
		}
	}
	return out
}
