package pulumix

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"nimbus/app/kernel/objstore"
)

// stateDir holds the stacks' file backends, one directory each, unless the state is shared.
func (r *Runner) stateDir() string { return filepath.Join(r.data, "state") }

// stackDir is the stack's working directory.
func (r *Runner) stackDir(name string) string { return filepath.Join(r.data, "stacks", name) }

// workDir is where scratch workspaces are made.
func (r *Runner) workDir() string { return filepath.Join(r.data, "work") }

// stateOf is the stack's own file backend, which its engine works on: the sandbox lets the
// engine reach exactly that state.
func (r *Runner) stateOf(stack string) (*objstore.Dir, error) {
	return objstore.NewDir(filepath.Join(r.stateDir(), stack))
}

// mirrorOf keeps the stack's state in the shared bucket, when there is one.
func (r *Runner) mirrorOf(stack string, local Bucket) *mirror {
	if r.shared == nil {
		return nil
	}
	return &mirror{shared: r.shared, local: local, stack: stack, synced: filepath.Join(r.data, "synced", stack)}
}

// forget removes the stack's directories: its working directory and its own file backend.
func (r *Runner) forget(name string) error {
	if err := os.RemoveAll(r.stackDir(name)); err != nil {
		return fmt.Errorf("remove the working directory of %s: %w", name, err)
	}
	if err := os.RemoveAll(filepath.Join(r.stateDir(), name)); err != nil {
		return fmt.Errorf("remove the state directory of %s: %w", name, err)
	}
	if err := os.Remove(filepath.Join(r.data, "synced", name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("forget the state of %s: %w", name, err)
	}
	return nil
}

// pruneHistory removes the update history the file backend keeps beside the stack's state
// (a record and a copy of the whole state per update), which no setting turns off: Nimbus
// records each operation itself, and the engine reads none of it.
func pruneHistory(state string) error {
	if err := os.RemoveAll(filepath.Join(state, ".pulumi", "history")); err != nil {
		return fmt.Errorf("prune the engine's history: %w", err)
	}
	return nil
}

// engineEnv is the environment of every engine process: the toolchain first on PATH, no
// network look-ups, the extra entries NewRunner was given, then the stack's file backend and
// the secrets passphrase, which no extra entry may replace. The passphrase travels in the
// environment only: a command line is visible to every user of the machine.
func (r *Runner) engineEnv(state, passphrase, home string) []string {
	env := map[string]string{
		"HOME":                                 home,
		"TMPDIR":                               filepath.Join(home, "tmp"),
		"PATH":                                 r.bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"PULUMI_SKIP_UPDATE_CHECK":             "true",
		"PULUMI_DIY_BACKEND_NO_LEGACY_WARNING": "true",
		// The event log is a debugging flag to the CLI.
		"PULUMI_DEBUG_COMMANDS": "true",
		"PULUMI_HOME":           home,
		// Nimbus keeps each operation's record itself: the file backend's copy of the whole
		// state after every update (and the history below, see pruneHistory) would only pile
		// up, and be handed to the engine's account file by file before every operation.
		"PULUMI_DIY_BACKEND_DISABLE_CHECKPOINT_BACKUPS": "true",
		// Plugins come from the toolchain directory only: a program may not fetch and run one.
		"PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
		// The CLI, the language host and the providers are Go programs that live for one
		// operation and allocate most while starting: collecting garbage a quarter as often
		// spends a sixth less CPU on an operation, and the limit still bounds a large stack.
		"GOGC":       "400",
		"GOMEMLIMIT": "2GiB",
	}
	for k, v := range r.env {
		env[k] = v
	}
	env["PULUMI_BACKEND_URL"] = "file://" + state
	env["PULUMI_CONFIG_PASSPHRASE"] = passphrase
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// opening says what an operation does with a stack the backend does not hold.
type opening int

const (
	mustExist opening = iota // ErrNoStack
	create                   // create it, its salt the one its name makes (see stackSalt)
	// createForUp creates it and leaves its salt to the engine, which makes one as it derives
	// the stack's key: an up saves no plan that another replica must read before the state
	// records the salt, so Nimbus need not spend a key derivation of its own (0.2 s) on it.
	createForUp
)

// open readies the stack's workspace: its program and settings written, the stack created in
// the backend as how says when it is missing, a lock a crashed engine left cleared when st is
// Exclusive. No engine process runs for any of it.
func (r *Runner) open(ctx context.Context, st Stack, how opening) (workspace, error) {
	ctx, span := tracer(ctx).Start(ctx, "workspace")
	defer span.End()
	if err := checkStack(st, true); err != nil {
		return workspace{}, err
	}
	state, err := r.stateOf(st.Name)
	if err != nil {
		return workspace{}, err
	}
	legacy := legacyProject(st.Code)
	m := r.mirrorOf(st.Name, state)
	if m != nil {
		m.lease = st.Exclusive
		if err := m.pull(ctx, legacy); err != nil {
			return workspace{}, err
		}
	}
	if err := adoptState(ctx, state, st.Name, legacy); err != nil {
		return workspace{}, fmt.Errorf("move stack %s to its project: %w", st.Name, err)
	}
	if st.Exclusive {
		if err := r.clearLock(ctx, state, st.Name); err != nil {
			return workspace{}, err
		}
	}
	dir := r.stackDir(st.Name)
	settings := filepath.Join(dir, "Pulumi."+st.Name+".yaml")
	// The backend says whether the stack exists, not the working directory: another replica
	// may have removed the stack, or made it, and then this one has no settings of its own.
	_, statErr := os.Stat(settings)
	local := statErr == nil
	exists, salt, err := readStack(ctx, state, st.Name, !local)
	if err != nil {
		return workspace{}, fmt.Errorf("look up stack %s: %w", st.Name, err)
	}
	if !exists && local {
		if err := os.Remove(settings); err != nil {
			return workspace{}, fmt.Errorf("forget the settings of %s: %w", st.Name, err)
		}
	}
	if !exists && how == mustExist {
		return workspace{}, fmt.Errorf("%w named %s", ErrNoStack, st.Name)
	}
	if !exists {
		if err := createStack(ctx, state, st.Name); err != nil {
			return workspace{}, err
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return workspace{}, fmt.Errorf("prepare %s: %w", dir, err)
	}
	if exists && !local && salt != "" {
		// The salt the state was encrypted with, which a plan saved on another replica needs.
		if err := os.WriteFile(settings, []byte("encryptionsalt: "+salt+"\n"), 0o600); err != nil {
			return workspace{}, fmt.Errorf("write stack settings: %w", err)
		}
	}
	// Written every time: the deployment may have moved to a new version of its program.
	if err := writeProgram(dir, st.Code); err != nil {
		return workspace{}, err
	}
	saltByEngine := !exists && how == createForUp && len(st.Secrets) == 0
	if err := r.writeSettings(settings, st, !saltByEngine); err != nil {
		return workspace{}, err
	}
	h, err := home(dir)
	if err != nil {
		return workspace{}, err
	}
	ws := workspace{stack: st.Name, dir: dir, tmp: filepath.Join(h, "tmp"), state: state.Root(), mirror: m,
		env: r.engineEnv(state.Root(), st.Passphrase, h), saltByEngine: saltByEngine}
	if err := ws.hand(st); err != nil {
		return workspace{}, err
	}
	return ws, nil
}

// hand gives the engine what the stack gives its provider to reach its cloud: the ports, the
// credentials in files and variables, and the values it must never show. An engine given
// credentials keeps its temporary files in memory (see memoryDir).
func (ws *workspace) hand(st Stack) error {
	ws.ports, ws.hidden = st.Ports, st.Hidden
	if holdsProviderSecret(st) {
		tmp, err := os.MkdirTemp(memoryDir, "nimbus-engine-")
		if err != nil {
			return fmt.Errorf("the engine's temporary directory in memory (%s): %w", memoryDir, err)
		}
		ws.tmp, ws.volatile = tmp, true
		for i, kv := range ws.env {
			if strings.HasPrefix(kv, "TMPDIR=") {
				ws.env[i] = "TMPDIR=" + tmp
			}
		}
	}
	for name, data := range st.Files {
		file := filepath.Join(ws.tmp, strings.ToLower(name))
		if err := os.WriteFile(file, data, 0o600); err != nil {
			ws.close()
			return fmt.Errorf("give the engine %s: %w", name, err)
		}
		ws.env = append(ws.env, name+"="+file)
	}
	for name, value := range st.Env {
		ws.env = append(ws.env, name+"="+value)
	}
	return nil
}

// memoryDir is where the engine of a stack holding a provider's credentials keeps its
// temporary files, removed when the operation ends: a provider may write its credentials
// there (the Kubernetes provider writes its kubeconfig for Helm, and leaves it), and they must
// reach no disk.
var memoryDir = "/dev/shm"

// leftFor is how long an engine's temporary directory in memory may stand before a starting
// Nimbus takes it for one left by a Nimbus that died mid-operation: longer than any operation
// runs, so that the directories of other Nimbus processes on the machine are left alone.
const leftFor = 24 * time.Hour

// sweepMemory removes engines' temporary directories in dir last changed before cutoff: a
// Nimbus that died mid-operation never removed them, and they may hold credentials.
func sweepMemory(dir string, cutoff time.Time) {
	left, _ := filepath.Glob(filepath.Join(dir, "nimbus-engine-*"))
	for _, d := range left {
		if info, err := os.Stat(d); err == nil && info.IsDir() && info.ModTime().Before(cutoff) {
			_ = os.RemoveAll(d)
		}
	}
}

// holdsProviderSecret reports whether a stack is given credentials, in files or in its
// environment: a provider may write what it was given to its temporary directory.
func holdsProviderSecret(st Stack) bool { return len(st.Files) > 0 || len(st.Env) > 0 }

// close removes what the engine left in a temporary directory of its own.
func (ws workspace) close() {
	if ws.volatile {
		_ = os.RemoveAll(ws.tmp)
	}
}

func checkStack(st Stack, needPassphrase bool) error {
	if !validStackName.MatchString(st.Name) {
		return fmt.Errorf("invalid stack name %q", st.Name)
	}
	for name := range st.Env {
		// The engine's own variables are Nimbus's: credentials may not move its state, its
		// home or its passphrase, nor change what it loads or trusts.
		if !providerVariable.MatchString(name) {
			return fmt.Errorf("stack %s: %q is not a provider's environment variable", st.Name, name)
		}
	}
	if needPassphrase && st.Passphrase == "" {
		// The CLI would otherwise ask for one, or fail with a message about prompting.
		return fmt.Errorf("stack %s: no secrets passphrase", st.Name)
	}
	return nil
}
