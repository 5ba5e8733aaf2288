package pulumix

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optdestroy"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optrefresh"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"
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
