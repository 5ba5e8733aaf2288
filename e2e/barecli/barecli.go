// Package barecli runs the pinned Pulumi CLI as a user would without Nimbus: the baseline the
// benchmarks hold the pipeline against.
package barecli

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"nimbus/app/platform/pulumix"
)

// CLI runs one program with the pulumi CLI of the toolchain, on a state backend of its own.
type CLI struct {
	path, dir string
	env       []string
	cpu       time.Duration // spent by the timed commands, their plugins included
}

// New readies code, a Pulumi.yaml, to run with the toolchain in pulumiDir (the built one when
// empty) on the state backend at url, reached with env. The simulated cloud gets a folder of
// its own.
func New(tb testing.TB, pulumiDir, code, url string, env map[string]string) *CLI {
	tb.Helper()
	tc := pulumix.Detect(context.Background(), pulumiDir)
	if tc.CLI == "" {
		tb.Fatal("the Pulumi toolchain is needed: go tool task toolchain")
	}
	dir, home := tb.TempDir(), tb.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Pulumi.yaml"), []byte(code), 0o600); err != nil {
		tb.Fatal(err)
	}
	c := &CLI{path: tc.CLI, dir: dir, env: append(os.Environ(), "PATH="+filepath.Dir(tc.CLI)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"PULUMI_BACKEND_URL="+url, "PULUMI_HOME="+home, "PULUMI_CONFIG_PASSPHRASE=bench", "SIMCLOUD_DIR="+tb.TempDir(),
		"PULUMI_SKIP_UPDATE_CHECK=true", "PULUMI_DIY_BACKEND_NO_LEGACY_WARNING=true",
		// The tuning Nimbus gives its engine, which a user could give theirs: the baseline is
		// the CLI at its best, so that a comparison with it measures Nimbus's own cost.
		"GOGC=400", "GOMEMLIMIT=2GiB", "PULUMI_DIY_BACKEND_DISABLE_CHECKPOINT_BACKUPS=true")}
	for k, v := range env {
		c.env = append(c.env, k+"="+v)
	}
	return c
}

// Deploy makes a stack called name, with name as its name setting, and times what a user runs
// to deploy it at best: one `pulumi up --yes`, which previews and applies in one process.
// Making the stack is not timed, as a user's stack exists before they deploy.
func (c *CLI) Deploy(tb testing.TB, name string) time.Duration {
	tb.Helper()
	return c.DeployWith(tb, name, map[string]string{"name": name})
}

// DeployWith is Deploy with the program's settings given: each of config is set on the stack
// before the timed part.
func (c *CLI) DeployWith(tb testing.TB, name string, config map[string]string) time.Duration {
	tb.Helper()
	return c.DeploySecretly(tb, name, config, nil)
}

// DeploySecretly is DeployWith with secret settings too, each set as a user sets one: with
// --secret, the value read from standard input rather than given as an argument.
func (c *CLI) DeploySecretly(tb testing.TB, name string, config, secrets map[string]string) time.Duration {
	tb.Helper()
	c.init(tb, name, config, secrets)
	return c.timed(tb, "up", "--yes", "--stack", name)
}

// ApplyPlan makes a stack called name, with name as its name setting, saves a plan of its
// deploy with `pulumi preview --save-plan`, and times what carries the plan out at best:
// `pulumi up --yes --skip-preview --plan`. Only that last is timed, as the preview was read
// before anyone decided to apply it.
func (c *CLI) ApplyPlan(tb testing.TB, name string) time.Duration {
	tb.Helper()
	c.init(tb, name, map[string]string{"name": name}, nil)
	plan := filepath.Join(tb.TempDir(), "plan.json")
	c.run(tb, "preview", "--save-plan", plan, "--stack", name)
	return c.timed(tb, "up", "--yes", "--skip-preview", "--plan", plan, "--stack", name)
}

// init makes the stack called name with its settings, as a user has before they deploy.
func (c *CLI) init(tb testing.TB, name string, config, secrets map[string]string) {
	tb.Helper()
	c.run(tb, "stack", "init", name)
	for k, v := range config {
		c.run(tb, "config", "set", k, v, "--stack", name)
	}
	for k, v := range secrets {
		c.runWith(tb, strings.NewReader(v), "config", "set", "--secret", k, "--stack", name)
	}
}

// Output is the output key of the stack called name, as a user reads it to hand it on to the
// next program.
func (c *CLI) Output(tb testing.TB, name, key string) string {
	tb.Helper()
	return strings.TrimSpace(string(c.run(tb, "stack", "output", key, "--stack", name).out))
}

// CPU is the processor time the timed commands spent so far, their plugins included: with
// the machine's cores, the least time a number of runs at once can take.
func (c *CLI) CPU() time.Duration { return c.cpu }

// timed runs a command a user runs to deploy, and says how long it took.
func (c *CLI) timed(tb testing.TB, args ...string) time.Duration {
	tb.Helper()
	start := time.Now()
	cmd := c.runWith(tb, nil, args...)
	took := time.Since(start)
	c.cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return took
}

func (c *CLI) run(tb testing.TB, args ...string) ran {
	tb.Helper()
	return c.runWith(tb, nil, args...)
}

// ran is a command that ran: its output, and its process as it ended.
type ran struct {
	out []byte
	*exec.Cmd
}

func (c *CLI) runWith(tb testing.TB, stdin io.Reader, args ...string) ran {
	tb.Helper()
	cmd := exec.Command(c.path, append(args, "--non-interactive")...)
	cmd.Dir, cmd.Env, cmd.Stdin = c.dir, c.env, stdin
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("pulumi %v: %v\n%s%s", args, err, out, stderr.Bytes())
	}
	return ran{out, cmd}
}
