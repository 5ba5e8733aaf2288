package pulumix

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/config"

	"nimbus/app/kernel/objstore"
	"nimbus/app/kernel/sandbox"
)

// Runner drives the Pulumi CLI, one engine process per operation: the stack's files are
// written here, and what the engine did is read from its events. One Runner, and one resolved
// CLI, serves every operation. Each stack has directories of its own under the data directory —
// stacks/<stack> to work in (with its own home), and with the file backend state/<stack> —
// and every engine process runs in a sandbox that reaches those and nothing else of the data
// directory.
type Runner struct {
	cli  command
	bin  string // the toolchain directory, put first on PATH so language hosts and providers are found
	data string // the data directory
	env  map[string]string
	// shared keeps every stack's state where every replica finds it (S3); nil, the file
	// backend each stack's engine works on is the only one.
	shared Bucket
	mode   sandbox.Mode
	clouds []string // directories that stand for a cloud, which deployments' engines may write
	closed []uint16 // TCP ports no engine may connect to (see WithClosedPorts)
	ports  portSets
	keys   keyring // the stacks' secrets keys, derived from their passphrases once
	// accountName is the account engine processes run as when Nimbus runs as root.
	accountName string
	log         *slog.Logger
}

// NewRunner finds the pinned toolchain (see Detect) and prepares the directories under dataDir.
// extraEnv reaches every Pulumi process, such as SIMCLOUD_DIR for the simulated cloud. Engine
// processes run in the sandbox (see package sandbox) unless WithSandbox says otherwise.
func NewRunner(toolchainDir, dataDir string, extraEnv map[string]string, opts ...Option) (*Runner, error) {
	if toolchainDir == "" {
		toolchainDir = cachedBuild()
	}
	cliPath := find(toolchainDir, "pulumi")
	if cliPath == "" {
		return nil, fmt.Errorf("the pulumi CLI was not found in %q or on PATH: run go tool task toolchain, or set NIMBUS_PULUMI_DIR", toolchainDir)
	}
	bin := filepath.Dir(cliPath)
	cli, err := newCommand(cliPath, time.Minute)
	if err != nil {
		return nil, fmt.Errorf("pulumi CLI: %w", err)
	}
	r := &Runner{cli: cli, bin: bin, data: dataDir, env: extraEnv, mode: sandbox.Auto, log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(r)
	}
	account, err := engineAccount(r.accountName)
	if err != nil {
		return nil, err
	}
	if r.mode == sandbox.Required && sandbox.ABI() == 0 {
		return nil, errors.New("the engine's sandbox is required (NIMBUS_SANDBOX=required), but this kernel has no Landlock")
	}
	base := sandbox.System()
	programs := programDirs(bin)
	base.Read = append(base.Read, programs...)
	r.cli.sandbox = sandbox.New(r.mode, base)
	r.cli.sandbox.Account = account
	if r.cli.sandbox.Base.Exec, err = r.runnable(toolchainPrograms(programs)); err != nil {
		return nil, err
	}
	own := append([]string{r.workDir(), r.stateDir(), filepath.Join(r.data, "stacks")}, r.clouds...)
	for _, d := range own {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("prepare %s: %w", d, err)
		}
	}
	if err := r.reachable(append(own, programs...)...); err != nil {
		return nil, err
	}
	if err := r.own(r.clouds...); err != nil {
		return nil, err
	}
	sweepMemory(memoryDir, time.Now().Add(-leftFor))
	if err := splitState(r.stateDir()); err != nil {
		return nil, fmt.Errorf("give each stack its own state directory: %w", err)
	}
	return r, nil
}

// Confined reports whether engine processes run in a Landlock sandbox, not only under limits.
func (r *Runner) Confined() bool { return r.cli.sandbox.Confined() }

// ConfinesNetwork reports whether engine processes connect only to the TCP ports they are
// given, which needs Landlock ABI 4.
func (r *Runner) ConfinesNetwork() bool { return r.cli.sandbox.ConfinesNetwork() }

// Account is the account engine processes run as, "" when they run as Nimbus.
func (r *Runner) Account() string {
	if r.cli.sandbox.Account == nil {
		return ""
	}
	if r.accountName == "" {
		return DefaultAccount
	}
	return r.accountName
}

// programDirs are the directories engine processes may run programs from: the toolchain's, the
// ones its links point into, and those on PATH, where language hosts and plugins are found.
func programDirs(bin string) []string {
	dirs := toolchainDirs(bin)
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if filepath.IsAbs(d) {
			dirs = append(dirs, d)
		}
	}
	slices.Sort(dirs)
	return slices.Compact(dirs)
}

// toolchainDirs are the toolchain's directory and those its links point into.
func toolchainDirs(bin string) []string {
	dirs := []string{bin}
	entries, _ := os.ReadDir(bin)
	for _, e := range entries {
		if target, err := filepath.EvalSymlinks(filepath.Join(bin, e.Name())); err == nil {
			dirs = append(dirs, filepath.Dir(target))
		}
	}
	slices.Sort(dirs)
	return slices.Compact(dirs)
}

// home makes the home directory of the engine working in dir: its PULUMI_HOME, HOME and
// TMPDIR, inside the directories it may write.
func home(dir string) (string, error) {
	h := filepath.Join(dir, ".home")
	if err := os.MkdirAll(filepath.Join(h, "tmp"), 0o700); err != nil {
		return "", fmt.Errorf("prepare %s: %w", h, err)
	}
	return h, nil
}

// CheckResult is what a preview of a program found.
type CheckResult struct {
	Succeeded bool
	Changes   map[string]int // planned operations by kind: create, update, delete, same…
	Output    string         // the engine's own words, for the author
}

// Check previews the stack's YAML program (st.Code) on a throwaway stack, with st.Config set
// as config and st.Secrets as secret config, as a deploy sets them (the engine refuses a plain
// value for config the program declares secret), so that unknown resource types, bad
// properties and provider errors surface before anyone deploys. The provider reaches its cloud
// as st says (Ports, Files, Env, Hidden), as a deploy's; Name and Passphrase are the check's
// own. Progress goes to progress as it happens. The workspace and its state are removed
// afterwards.
func (r *Runner) Check(ctx context.Context, st Stack, progress io.Writer) (CheckResult, error) {
	const stack = "check"
	// The scratch stack holds no secret worth keeping, and its state is thrown away with it.
	st.Name, st.Passphrase = stack, randomHex(16)
	if err := checkStack(st, true); err != nil {
		return CheckResult{}, err
	}
	dir, err := os.MkdirTemp(r.workDir(), "check-")
	if err != nil {
		return CheckResult{}, fmt.Errorf("check workspace: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := writeProgram(dir, st.Code); err != nil {
		return CheckResult{}, err
	}
	// A backend of its own, whatever the Runner's: a check must leave nothing in shared state.
	state, err := objstore.NewDir(filepath.Join(dir, ".state"))
	if err != nil {
		return CheckResult{}, err
	}
	if err := createStack(ctx, state, stack); err != nil {
		return CheckResult{}, err
	}
	settings := filepath.Join(dir, "Pulumi."+stack+".yaml")
	if err := r.writeSettings(settings, st, false); err != nil {
		return CheckResult{}, err
	}
	h, err := home(dir)
	if err != nil {
		return CheckResult{}, err
	}
	env := append(r.engineEnv(state.Root(), st.Passphrase, h),
		"SIMCLOUD_DIR="+filepath.Join(dir, "cloud")) // its cloud is thrown away with it
	ws := workspace{stack: stack, dir: dir, tmp: filepath.Join(h, "tmp"), state: state.Root(), env: env, scratch: true}
	if err := ws.hand(st); err != nil {
		return CheckResult{}, err
	}
	defer ws.close()
	started := time.Now()
	run, err := r.run(ctx, ws, progress, "preview", "--parallel", parallel)
	out := CheckResult{Changes: run.changes, Output: run.output}
	if err != nil {
		if ctx.Err() != nil {
			return out, fmt.Errorf("check: %w", ctx.Err())
		}
		var ee *EngineError
		if !errors.As(err, &ee) {
			return out, fmt.Errorf("check: %w", err)
		}
		if out.Output == "" {
			out.Output = err.Error()
		} else if ee.Refused != "" {
			out.Output += "\n\nerror: " + ee.Refused
		}
		return out, nil
	}
	out.Succeeded = true
	out.Output = fmt.Sprintf("preview succeeded in %s: %s", time.Since(started).Round(time.Millisecond), summarise(run.changes))
	return out, nil
}

// configValue turns an input's JSON value into stack config: scalars as text, which Pulumi
// converts to the declared type, lists and objects as structured values.
func configValue(v any) (config.Value, error) {
	switch x := v.(type) {
	case string:
		return config.NewValue(x), nil
	case float64:
		return config.NewValue(strconv.FormatFloat(x, 'f', -1, 64)), nil
	case bool:
		return config.NewValue(strconv.FormatBool(x)), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return config.Value{}, err
	}
	return config.NewObjectValue(string(b)), nil
}

// quiet drops the engine's noise (see Noise) from its output.
func quiet(output string) string {
	lines := strings.Split(output, "\n")
	kept := lines[:0]
	for _, l := range lines {
		if !Noise(l) {
			kept = append(kept, l)
		}
	}
	return strings.TrimSpace(strings.Join(kept, "\n"))
}

// Noise reports whether a line of the engine's output is its notice that a provider came from
// PATH, which it repeats for every step, which says nothing about the program, and which would
// show a user where the server keeps its tools.
func Noise(line string) bool {
	return strings.Contains(line, "warning: using pulumi-") && strings.Contains(line, "from $PATH")
}

func summarise(changes map[string]int) string {
	var parts []string
	for _, op := range []apitype.OpType{apitype.OpCreate, apitype.OpUpdate, apitype.OpReplace, apitype.OpDelete, apitype.OpSame} {
		if n := changes[string(op)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d to %s", n, op))
		}
	}
	if len(parts) == 0 {
		return "no changes"
	}
	return strings.Join(parts, ", ")
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
