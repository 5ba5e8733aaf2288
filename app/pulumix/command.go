package pulumix

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/blang/semver"
)

// command runs the pulumi CLI for the Automation API with only the environment the engine
// needs. Programs run inside the engine, so nothing of Nimbus's own — the database URL, the
// master key, the first admin's password — may reach it.
type command struct {
	path    string
	version semver.Version
	// grace is how long an interrupted engine gets to stop cleanly and unlock its stack
	// before it is killed.
	grace time.Duration
}

// passedEnv is what the engine keeps of Nimbus's environment: where programs are, where to
// write, how to reach the network.
var passedEnv = []string{"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "TZ", "SSL_CERT_FILE", "SSL_CERT_DIR",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy"}

func newCommand(path string, grace time.Duration) (command, error) {
	out, err := exec.Command(path, "version").Output()
	if err != nil {
		return command{}, fmt.Errorf("%s version: %w", path, err)
	}
	v, err := semver.ParseTolerant(strings.TrimSpace(string(out)))
	if err != nil {
		return command{}, fmt.Errorf("%s version: %w", path, err)
	}
	return command{path: path, version: v, grace: grace}, nil
}

// Version is the CLI's version.
func (c command) Version() semver.Version { return c.version }

// Run runs the CLI non-interactively. Cancelling ctx interrupts the whole process group with
// SIGINT, as Ctrl-C would, and kills it only if it has not stopped within the grace period.
func (c command) Run(ctx context.Context, workdir string, stdin io.Reader, out, errOut []io.Writer,
	extraEnv []string, args ...string) (string, string, int, error) {
	if !slices.Contains(args, "--non-interactive") {
		args = append([]string{"--non-interactive"}, args...)
	}
	cmd := exec.CommandContext(ctx, c.path, args...)
	cmd.Dir = workdir
	cmd.Stdin = stdin
	for _, k := range passedEnv {
		if v, ok := os.LookupEnv(k); ok {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	cmd.Env = append(append(cmd.Env, extraEnv...), "PULUMI_AUTOMATION_API=true")
	var stdout, stderr bytes.Buffer
	cmd.Stdout = io.MultiWriter(append(out, &stdout)...)
	cmd.Stderr = io.MultiWriter(append(errOut, &stderr)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) }
	cmd.WaitDelay = c.grace
	err := cmd.Run()
	code := -2
	var exit *exec.ExitError
	switch {
	case err == nil:
		code = 0
	case errors.As(err, &exit):
		code = exit.ExitCode()
	}
	return stdout.String(), stderr.String(), code, err
}
