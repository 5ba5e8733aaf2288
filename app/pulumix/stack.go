package pulumix

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optdestroy"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optrefresh"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/config"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
	"go.yaml.in/yaml/v3"

	"nimbus/app/objstore"
)

// Stack says which deployment's stack to act on and with what.
type Stack struct {
	Name       string            // stack name, unique per deployment, e.g. "d-<id>"
	Code       string            // the YAML program (Pulumi.yaml); its `name` is the project
	Config     map[string]any    // plain inputs: scalars as text, lists and objects structured (see configValue)
	Secrets    map[string]string // secret inputs: stored encrypted in the stack, never on a command line
	Passphrase string            // the stack's secrets passphrase (derived per stack by the caller)
	// Exclusive says the caller holds the stack alone (an operation's lease): a lock found on it
	// was left by an engine that crashed, and is cleared before the engine starts.
	Exclusive bool
}

// Result is what an operation did.
type Result struct {
	Outputs map[string]any // stack outputs; secret outputs as the string "[secret]"
	Changes map[string]int // operations by kind: create, update, delete, same, replace…
	Output  string         // the engine's own words: the tail of its progress, without PATH notices
}

// EngineError is a failure the engine reported: the program or a provider refused or failed.
// Running the same operation again as is will fail the same way. Any other error from the stack
// operations is about reaching the engine or the state, and may pass.
type EngineError struct {
	Op       string // preview, up, refresh or destroy
	ExitCode int
	Output   string // the tail of the engine's output, as in Result.Output
}

func (e *EngineError) Error() string {
	return fmt.Sprintf("pulumi %s failed (exit %d): %s", e.Op, e.ExitCode, gist(e.Output))
}

// ErrLocked means another engine holds the stack's lock, or a crashed one left it behind. When
// the caller knows no engine runs the stack, clearLock frees it (see Stack.Exclusive).
var ErrLocked = errors.New("the stack is locked")

// ErrNoStack means the stack does not exist in the backend (only Export reports it: Destroy of
// a missing stack is done already, and the other operations create it).
var ErrNoStack = errors.New("no such stack")

// The stack name becomes a directory name, and the project name part of the lock's path: neither
// may climb out of its directory. Pulumi allows the same characters.
var (
	validStackName   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$`)
	validProjectName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}$`)
)

// Every operation uses the same, modest degree of parallelism: the engine's default grows with
// the machine (4 per CPU), and one deployment of many resources could starve the others.
const parallel = 8

// Preview shows what an Up would do. The stack is created when it does not exist yet.
func (r *Runner) Preview(ctx context.Context, st Stack, progress io.Writer) (Result, error) {
	s, err := r.prepare(ctx, st, true)
	if err != nil {
		return Result{}, err
	}
	said, w := r.streams(progress)
	opts := []optpreview.Option{optpreview.Parallel(parallel), optpreview.Color("never"),
		optpreview.ProgressStreams(w), optpreview.ErrorProgressStreams(w)}
	events, delivered := watch(progress)
	if events != nil {
		opts = append(opts, optpreview.EventStreams(events))
	}
	res, err := s.Preview(ctx, opts...)
	delivered()
	return previewed(ctx, st.Name, said.text(), res, err)
}

// previewed is the result of a preview, of changes or of a destroy.
func previewed(ctx context.Context, stack, output string, res auto.PreviewResult, err error) (Result, error) {
	out := Result{Changes: map[string]int{}, Output: output}
	for op, n := range res.ChangeSummary {
		out.Changes[string(op)] = n
	}
	if err != nil {
		return out, failure(ctx, "preview", stack, err, out.Output)
	}
	return out, nil
}

// Up creates or updates the stack's resources to match the program and its inputs.
func (r *Runner) Up(ctx context.Context, st Stack, progress io.Writer) (Result, error) {
	s, err := r.prepare(ctx, st, true)
	if err != nil {
		return Result{}, err
	}
	said, w := r.streams(progress)
	// ShowSecrets(false) keeps the summary Up fetches afterwards from decrypting the config.
	opts := []optup.Option{optup.Parallel(parallel), optup.Color("never"),
		optup.ProgressStreams(w), optup.ErrorProgressStreams(w), optup.ShowSecrets(false)}
	events, delivered := watch(progress)
	if events != nil {
		opts = append(opts, optup.EventStreams(events))
	}
	res, err := s.Up(ctx, opts...)
	delivered()
	out := Result{Outputs: map[string]any{}, Changes: changes(res.Summary.ResourceChanges), Output: said.text()}
	for k, v := range res.Outputs {
		out.Outputs[k] = v.Value
		if v.Secret {
			out.Outputs[k] = "[secret]"
		}
	}
	if err != nil {
		return out, failure(ctx, "up", st.Name, err, out.Output)
	}
	return out, nil
}

// Refresh brings the stack's state in line with what the cloud actually has: resources deleted
// by hand leave the state, drifted properties are read back.
func (r *Runner) Refresh(ctx context.Context, st Stack, progress io.Writer) (Result, error) {
	s, err := r.prepare(ctx, st, true)
	if err != nil {
		return Result{}, err
	}
	said, w := r.streams(progress)
	opts := []optrefresh.Option{optrefresh.Parallel(parallel), optrefresh.Color("never"),
		optrefresh.ProgressStreams(w), optrefresh.ErrorProgressStreams(w), optrefresh.ShowSecrets(false)}
	events, delivered := watch(progress)
	if events != nil {
		opts = append(opts, optrefresh.EventStreams(events))
	}
	res, err := s.Refresh(ctx, opts...)
	delivered()
	out := Result{Changes: changes(res.Summary.ResourceChanges), Output: said.text()}
	if err != nil {
		return out, failure(ctx, "refresh", st.Name, err, out.Output)
	}
	return out, nil
}

// Destroy deletes the stack's resources, then the stack itself from the backend and its working
// directory. A stack that does not exist is destroyed already, so Destroy can be repeated after
// a crash at any point.
func (r *Runner) Destroy(ctx context.Context, st Stack, progress io.Writer) (Result, error) {
	s, err := r.prepare(ctx, st, false)
	if errors.Is(err, ErrNoStack) {
		if err := r.forget(st.Name); err != nil {
			return Result{}, err
		}
		return Result{Changes: map[string]int{}, Output: fmt.Sprintf("no stack named %s: nothing to destroy", st.Name)}, nil
	} else if err != nil {
		return Result{}, err
	}
	said, w := r.streams(progress)
	opts := []optdestroy.Option{optdestroy.Parallel(parallel), optdestroy.Color("never"),
		optdestroy.ProgressStreams(w), optdestroy.ErrorProgressStreams(w), optdestroy.ShowSecrets(false)}
	events, delivered := watch(progress)
	if events != nil {
		opts = append(opts, optdestroy.EventStreams(events))
	}
	res, err := s.Destroy(ctx, opts...)
	delivered()
	out := Result{Changes: changes(res.Summary.ResourceChanges), Output: said.text()}
	if err != nil {
		return out, failure(ctx, "destroy", st.Name, err, out.Output)
	}
	// Without --force, stack rm refuses a stack that still has resources: the backend keeps
	// the only record of them.
	if err := s.Workspace().RemoveStack(ctx, st.Name); err != nil {
		if ctx.Err() != nil {
			return out, fmt.Errorf("remove stack %s: %w", st.Name, ctx.Err())
		}
		return out, fmt.Errorf("remove stack %s: %w", st.Name, err)
	}
	if err := r.forget(st.Name); err != nil {
		return out, err
	}
	return out, nil
}

// PreviewDestroy shows what Destroy would delete, deleting nothing: its events plan a delete of
// each resource. A stack that does not exist has nothing to delete.
func (r *Runner) PreviewDestroy(ctx context.Context, st Stack, progress io.Writer) (Result, error) {
	_, statErr := os.Stat(r.stackDir(st.Name))
	s, err := r.prepare(ctx, st, false)
	if errors.Is(err, ErrNoStack) {
		if errors.Is(statErr, fs.ErrNotExist) {
			_ = r.forget(st.Name) // looking must not leave a directory behind
		}
		return Result{Changes: map[string]int{}, Output: fmt.Sprintf("no stack named %s: nothing to destroy", st.Name)}, nil
	} else if err != nil {
		return Result{}, err
	}
	said, w := r.streams(progress)
	opts := []optdestroy.Option{optdestroy.Parallel(parallel), optdestroy.Color("never"),
		optdestroy.ProgressStreams(w), optdestroy.ErrorProgressStreams(w), optdestroy.ShowSecrets(false)}
	events, delivered := watch(progress)
	if events != nil {
		opts = append(opts, optdestroy.EventStreams(events))
	}
	res, err := s.PreviewDestroy(ctx, opts...)
	delivered()
	return previewed(ctx, st.Name, said.text(), res, err)
}

// clearLock removes the lock a crashed engine left on the stack, which otherwise refuses every
// later operation. The caller guarantees that no engine runs the stack: removing a live engine's
// lock lets two engines write one state.
//
// A DIY backend, on disk or in a bucket, keeps one file per lock holder at
// .pulumi/locks/organization/<project>/<stack>/<lock id>.json.
func (r *Runner) clearLock(st Stack) error {
	if err := checkStack(st, false); err != nil {
		return err
	}
	var p struct {
		Name string `yaml:"name"`
	}
	if err := yaml.Unmarshal([]byte(st.Code), &p); err != nil {
		return fmt.Errorf("read program: %w", err)
	}
	if !validProjectName.MatchString(p.Name) || p.Name == "." || p.Name == ".." {
		return fmt.Errorf("read program: invalid project name %q", p.Name)
	}
	// Its callers have no context to give: a bucket that does not answer must not hold the
	// operation forever.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	backend, err := r.backendOf(st.Name)
	if err != nil {
		return fmt.Errorf("clear lock of %s: %w", st.Name, err)
	}
	dir := lockDir(p.Name, st.Name)
	locks, err := backend.Bucket.List(ctx, dir)
	if err != nil {
		return fmt.Errorf("clear lock of %s: %w", st.Name, err)
	}
	host, _ := os.Hostname()
	for _, key := range locks {
		if name := strings.TrimPrefix(key, dir); strings.Contains(name, "/") || !strings.HasSuffix(name, ".json") {
			continue
		}
		content, err := readLock(ctx, backend.Bucket, key)
		if errors.Is(err, objstore.ErrNotFound) {
			continue // its engine finished meanwhile
		} else if err != nil {
			return fmt.Errorf("clear lock of %s: %w", st.Name, err)
		}
		if held(content, host) {
			// The engine that took it still runs — a crashed server leaves its engine behind —
			// and two engines on one stack would corrupt it: wait for it to finish.
			return fmt.Errorf("clear lock of %s: %w", st.Name, ErrLocked)
		}
		if err := backend.Bucket.Delete(ctx, key); err != nil {
			return fmt.Errorf("clear lock of %s: %w", st.Name, err)
		}
	}
	return nil
}

// lockDir is the prefix of a stack's lock files in a DIY backend.
func lockDir(project, stack string) string {
	return path.Join(".pulumi", "locks", "organization", project, stack) + "/"
}

func readLock(ctx context.Context, b Bucket, key string) ([]byte, error) {
	rc, err := b.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(io.LimitReader(rc, 64<<10)) // a lock is a line of JSON
}

// held reports whether the lock names a process on this host that is still alive. A lock from
// another host cannot be checked; the operation's lease has already established that its
// server is gone.
func held(content []byte, host string) bool {
	var lock struct {
		PID      int    `json:"pid"`
		Hostname string `json:"hostname"`
	}
	if json.Unmarshal(content, &lock) != nil || lock.PID <= 0 || lock.Hostname != host {
		return false
	}
	if err := syscall.Kill(lock.PID, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	// A killed engine its parent has not reaped yet still answers signals; it holds nothing.
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", lock.PID))
	if err != nil {
		return true
	}
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
		return false
	}
	return true
}

// Export returns the stack's state as the JSON `pulumi stack export` writes. Secrets in it stay
// encrypted.
func (r *Runner) Export(ctx context.Context, st Stack) ([]byte, error) {
	_, statErr := os.Stat(r.stackDir(st.Name))
	ws, err := r.workspace(ctx, st)
	if err != nil {
		return nil, err
	}
	s, err := r.selectStack(ctx, ws, st.Name)
	if errors.Is(err, ErrNoStack) && errors.Is(statErr, fs.ErrNotExist) {
		_ = os.RemoveAll(r.stackDir(st.Name)) // looking must not leave a directory behind
	}
	if err != nil {
		return nil, err
	}
	dep, err := s.Export(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("export %s: %w", st.Name, ctx.Err())
		}
		return nil, fmt.Errorf("export %s: %w", st.Name, err)
	}
	return json.Marshal(dep)
}

// stateDir holds the stacks' file backends, one directory each, unless the state is shared.
func (r *Runner) stateDir() string { return filepath.Join(r.data, "state") }

// stackDir is the stack's working directory.
func (r *Runner) stackDir(name string) string { return filepath.Join(r.data, "stacks", name) }

// workDir is where scratch workspaces are made.
func (r *Runner) workDir() string { return filepath.Join(r.data, "work") }

// backendOf is where the stack's state is: the shared backend, else a file backend of its own,
// so that the sandbox can let its engine reach exactly its own state.
func (r *Runner) backendOf(stack string) (Backend, error) {
	if r.backend.URL != "" {
		return r.backend, nil
	}
	dir, err := objstore.NewDir(filepath.Join(r.stateDir(), stack))
	if err != nil {
		return Backend{}, err
	}
	return Backend{URL: "file://" + dir.Root(), Bucket: dir}, nil
}

// forget removes the stack's directories: its working directory and its own file backend.
func (r *Runner) forget(name string) error {
	if err := os.RemoveAll(r.stackDir(name)); err != nil {
		return fmt.Errorf("remove the working directory of %s: %w", name, err)
	}
	if r.backend.URL == "" {
		if err := os.RemoveAll(filepath.Join(r.stateDir(), name)); err != nil {
			return fmt.Errorf("remove the state directory of %s: %w", name, err)
		}
	}
	return nil
}

// engineEnv is the environment of every engine process: the toolchain first on PATH, no
// network look-ups, the extra entries NewRunner was given, then the state backend with what
// reaching it takes and the secrets passphrase, which no extra entry may replace. Credentials
// and the passphrase travel in the environment only: a command line is visible to every user
// of the machine.
func (r *Runner) engineEnv(backend Backend, passphrase, home string) map[string]string {
	env := map[string]string{
		"HOME":                                 home,
		"TMPDIR":                               filepath.Join(home, "tmp"),
		"PATH":                                 r.bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"PULUMI_SKIP_UPDATE_CHECK":             "true",
		"PULUMI_DIY_BACKEND_NO_LEGACY_WARNING": "true",
		"PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK": "true",
		// Plugins come from the toolchain directory only: a program may not fetch and run one.
		"PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
	}
	for k, v := range r.env {
		env[k] = v
	}
	for k, v := range backend.Env {
		env[k] = v
	}
	env["PULUMI_BACKEND_URL"] = backend.URL
	env["PULUMI_CONFIG_PASSPHRASE"] = passphrase
	return env
}

// workspace writes the program into the stack's working directory and opens a workspace there.
func (r *Runner) workspace(ctx context.Context, st Stack) (auto.Workspace, error) {
	if err := checkStack(st, true); err != nil {
		return nil, err
	}
	dir := r.stackDir(st.Name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("prepare %s: %w", dir, err)
	}
	// Written every time: the deployment may have moved to a new version of its program.
	if err := os.WriteFile(filepath.Join(dir, "Pulumi.yaml"), []byte(st.Code), 0o600); err != nil {
		return nil, fmt.Errorf("write program: %w", err)
	}
	h, err := home(dir)
	if err != nil {
		return nil, err
	}
	backend, err := r.backendOf(st.Name)
	if err != nil {
		return nil, err
	}
	env := r.engineEnv(backend, st.Passphrase, h)
	ws, err := auto.NewLocalWorkspace(ctx, auto.WorkDir(dir), auto.Pulumi(r.cli), auto.PulumiHome(h), auto.EnvVars(env))
	if err != nil {
		return nil, fmt.Errorf("workspace of %s: %w", st.Name, err)
	}
	return ws, nil
}

// selectStack selects an existing stack, by name: on a DIY backend that reads one stack, where
// listing would read them all.
func (r *Runner) selectStack(ctx context.Context, ws auto.Workspace, name string) (auto.Stack, error) {
	s, err := auto.SelectStack(ctx, name, ws)
	switch {
	case err == nil:
		return s, nil
	case ctx.Err() != nil:
		return s, fmt.Errorf("select stack %s: %w", name, ctx.Err())
	case auto.IsSelectStack404Error(err):
		return s, fmt.Errorf("%w named %s", ErrNoStack, name)
	}
	return s, fmt.Errorf("select stack %s: %w", name, err)
}

// prepare readies the workspace, selects the stack (creating it when create is set and it is
// missing) and writes its inputs into the stack settings.
func (r *Runner) prepare(ctx context.Context, st Stack, create bool) (auto.Stack, error) {
	if st.Exclusive {
		if err := r.clearLock(st); err != nil {
			return auto.Stack{}, err
		}
	}
	ws, err := r.workspace(ctx, st)
	if err != nil {
		return auto.Stack{}, err
	}
	s, err := r.selectStack(ctx, ws, st.Name)
	if errors.Is(err, ErrNoStack) && create {
		// stack init writes the salt of the stack's passphrase into Pulumi.<stack>.yaml.
		s, err = auto.NewStack(ctx, st.Name, ws)
		if err != nil && ctx.Err() != nil {
			err = ctx.Err()
		}
		if err != nil {
			return s, fmt.Errorf("create stack %s: %w", st.Name, err)
		}
	} else if err != nil {
		return s, err
	}
	if err := r.writeInputs(ctx, ws, st); err != nil {
		if ctx.Err() != nil {
			return s, fmt.Errorf("config of %s: %w", st.Name, ctx.Err())
		}
		return s, err
	}
	return s, nil
}

// writeInputs replaces the stack's config with st's inputs, so that an input the deployment no
// longer has does not linger. Plain values go straight into the settings file, as saveConfig
// does; secrets go through the CLI, which encrypts them with the stack's key, reading each value
// from its standard input so that it never appears on a command line.
func (r *Runner) writeInputs(ctx context.Context, ws auto.Workspace, st Stack) error {
	project, err := ws.ProjectSettings(ctx)
	if err != nil {
		return fmt.Errorf("read program: %w", err)
	}
	settings := filepath.Join(ws.WorkDir(), "Pulumi."+st.Name+".yaml")
	ps := &workspace.ProjectStack{}
	if _, err := os.Stat(settings); err == nil {
		// Keeps the encryption salt stack init wrote.
		if ps, err = ws.StackSettings(ctx, st.Name); err != nil {
			return fmt.Errorf("read stack settings: %w", err)
		}
	}
	ps.Config = config.Map{}
	for k, v := range st.Config {
		if _, dup := st.Secrets[k]; dup {
			return fmt.Errorf("config %s: both a plain and a secret input", k)
		}
		value, err := configValue(v)
		if err != nil {
			return fmt.Errorf("config %s: %w", k, err)
		}
		if err := ps.Config.Set(config.MustMakeKey(string(project.Name), k), value, false); err != nil {
			return fmt.Errorf("config %s: %w", k, err)
		}
	}
	if err := ws.SaveStackSettings(ctx, st.Name, ps); err != nil {
		return err
	}
	var env []string
	for k, v := range ws.GetEnvVars() {
		env = append(env, k+"="+v)
	}
	env = append(env, "PULUMI_HOME="+ws.PulumiHome())
	keys := make([]string, 0, len(st.Secrets))
	for k := range st.Secrets {
		keys = append(keys, k)
	}
	slices.Sort(keys) // a stable order keeps the settings file's history readable
	for _, k := range keys {
		// --raw keeps a trailing newline (a key file's, say): the value is exactly the input.
		_, stderr, _, err := r.cli.Run(ctx, ws.WorkDir(), strings.NewReader(st.Secrets[k]), nil, nil, env,
			"config", "set", "--secret", "--raw", "--stack", st.Name, "--", k)
		if err != nil {
			return fmt.Errorf("secret config %s: %w: %s", k, err, strings.TrimSpace(stderr))
		}
	}
	return nil
}

func checkStack(st Stack, needPassphrase bool) error {
	if !validStackName.MatchString(st.Name) {
		return fmt.Errorf("invalid stack name %q", st.Name)
	}
	if needPassphrase && st.Passphrase == "" {
		// The CLI would otherwise ask for one, or fail with a message about prompting.
		return fmt.Errorf("stack %s: no secrets passphrase", st.Name)
	}
	return nil
}

// streams sends the engine's output to progress as it comes, and keeps its tail for the Result.
// The CLI's stdout and stderr are copied by two goroutines, so writes are serialised.
func (r *Runner) streams(progress io.Writer) (*tail, io.Writer) {
	said := &tail{max: 256 << 10}
	if progress == nil {
		return said, &serial{w: said}
	}
	return said, &serial{w: io.MultiWriter(progress, said)}
}

type serial struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *serial) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// brief is an Automation API error cut to its first line: the rest is the command's whole
// stdout and stderr, whose tail the Result already holds.
type brief struct{ error }

func (b brief) Error() string {
	msg, _, _ := strings.Cut(b.error.Error(), "\n")
	return msg
}

func (b brief) Unwrap() error { return b.error }

func (t *tail) text() string { return quiet(strings.ToValidUTF8(t.String(), "")) }

// failure sorts an operation's error for the caller: cancelled (the caller decides), locked
// (Stack.Exclusive clears what a crashed engine left), refused by the engine (retrying as is
// will not), or anything else.
func failure(ctx context.Context, op, stack string, err error, output string) error {
	if ctx.Err() != nil {
		return fmt.Errorf("pulumi %s of %s: %w", op, stack, ctx.Err())
	}
	if auto.IsConcurrentUpdateError(err) {
		return fmt.Errorf("pulumi %s of %s: %w: %s", op, stack, ErrLocked, gist(output))
	}
	// A signal's death (exit code -1) is not the engine's verdict: it was killed mid-way, and
	// may well succeed when run again.
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() >= 0 {
		if output == "" {
			output = err.Error()
		}
		return &EngineError{Op: op, ExitCode: exit.ExitCode(), Output: output}
	}
	return fmt.Errorf("pulumi %s of %s: %w", op, stack, brief{err})
}

// gist picks the lines of the engine's output that say what went wrong, for an error message;
// the whole output stays in the Result or the EngineError.
func gist(output string) string {
	var picked []string
	for _, l := range strings.Split(output, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "error:") || strings.Contains(l, "locked") {
			picked = append(picked, l)
		}
	}
	if len(picked) > 3 {
		picked = picked[len(picked)-3:]
	}
	if len(picked) == 0 {
		lines := strings.Split(strings.TrimSpace(output), "\n")
		picked = lines[len(lines)-1:]
	}
	return strings.Join(picked, "; ")
}

func changes(m *map[string]int) map[string]int {
	out := map[string]int{}
	if m != nil {
		for k, v := range *m {
			out[k] = v
		}
	}
	return out
}
