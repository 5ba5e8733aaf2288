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
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// Stack says which deployment's stack to act on and with what.
type Stack struct {
	Name    string            // stack name, unique per deployment, e.g. "d-<id>"
	Code    string            // the YAML program; Nimbus names the project (see project.go)
	Config  map[string]any    // plain inputs: scalars as text, lists and objects structured (see configValue)
	Secrets map[string]string // secret inputs: stored encrypted in the stack, never on a command line
	// Ports are the TCP ports its provider reaches its cloud on, such as the cluster's API
	// server's: the engine may connect to these and to the ports its own processes listen on.
	Ports []uint16
	// Settings are the provider's settings, <package>:<name>, such as kubernetes:namespace: only
	// Nimbus sets them, never the program or its inputs, which are the project's own.
	Settings   map[string]string
	Passphrase string // the stack's secrets passphrase (derived per stack by the caller)
	// Exclusive says the caller holds the stack alone (an operation's lease): a lock found on it
	// was left by an engine that crashed, and is cleared before the engine starts.
	Exclusive bool
	// Refresh makes Preview, Up and Apply read the resources back from the cloud first, so that
	// they change what drifted back to what the program declares.
	Refresh bool
	// Files are credentials issued for this run alone, such as a kubeconfig holding a token
	// that expires: each is written, readable by the engine only, in its temporary directory in
	// memory, which goes when the run ends, and named to it by the environment variable its key
	// is (KUBECONFIG). Being in no setting, they are in neither the state nor a saved plan, so
	// a plan made with one holds when carried out with the next, and a refresh or destroy uses
	// the one given now, not one the state recorded.
	Files map[string][]byte
	// Env are credentials a provider reads from its environment when the program declares no
	// provider of its own, such as PROXMOX_VE_API_TOKEN: set on this run's engine process
	// alone, which hands them to the plugins it starts. Like Files, they are in no setting, so
	// neither the state, a saved plan nor a command line holds them.
	Env map[string]string
	// Hidden are values what the engine says never shows, such as the secret of a token given
	// in Env: its progress, its errors and the outputs say [secret] where a provider echoed one.
	Hidden []string
}

// Result is what an operation did.
type Result struct {
	Outputs map[string]any // stack outputs; secret outputs as the string "[secret]"
	Changes map[string]int // operations by kind: create, update, delete, same, replace…
	Output  string         // the engine's own words: the tail of its progress, without PATH notices
	Plan    []byte         // a preview's update plan, for Apply
	// Began says the engine went past its preview to the resources themselves: an up that
	// failed without it changed nothing.
	Began bool
	// Drift is what a DriftCheck found, or the refresh of a Preview, Up or Apply that refreshes
	// first: the resources whose cloud differs from the state.
	Drift []Drifted
	// Planned is what a Preview plans, resource by resource, in the engine's order.
	Planned []Planned
}

// Drifted is a resource whose cloud differs from what the stack's state recorded: its
// properties that differ (old is the recorded value, new the one found), or gone (Op delete).
type Drifted struct {
	URN     string   `json:"urn"`
	Type    string   `json:"type"`
	Name    string   `json:"name"`
	Op      string   `json:"op"` // update: properties differ; delete: gone from the cloud
	Changes []Change `json:"changes"`
}

// EngineError is a failure the engine reported: the program or a provider refused or failed.
// Running the same operation again as is will fail the same way. Any other error from the stack
// operations is about reaching the engine or the state, and may pass.
type EngineError struct {
	Op       string // preview, up, refresh or destroy
	ExitCode int
	Output   string // the tail of the engine's output, as in Result.Output
	// Refused is why Nimbus refused what the engine did, when the engine itself succeeded: a
	// program that made more than Nimbus takes.
	Refused string
}

func (e *EngineError) Error() string {
	if e.Refused != "" {
		return fmt.Sprintf("pulumi %s: %s", e.Op, e.Refused)
	}
	return fmt.Sprintf("pulumi %s failed (exit %d): %s", e.Op, e.ExitCode, gist(e.Output))
}

// tooLarge is the failure of a run whose program made more than Nimbus takes. It is final: the
// same run makes as much again.
func tooLarge(op, why, output string) error {
	return &EngineError{Op: op, Output: output, Refused: why}
}

// MaxOutputs is the largest a stack's outputs may be, as JSON: they are kept with the
// deployment, shown on its pages and handed to the slots wired to them.
const MaxOutputs = 1 << 20

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
	// validInput is the name of a component's input, as its schema allows.
	validInput = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,62}$`)
	// providerVariable is an environment variable a provider reads its credentials from: the
	// prefix of a provider Nimbus hands credentials that way, and a name, such as
	// PROXMOX_VE_ENDPOINT. An allow-list, so that no name of the engine's own can pass.
	providerVariable = regexp.MustCompile(`^PROXMOX_VE_[A-Z0-9_]+$`)
)

// Every operation uses the same, modest degree of parallelism: the engine's default grows with
// the machine (4 per CPU), and one deployment of many resources could starve the others.
const parallel = "8"

// Preview shows what an Up would do, and saves the engine's update plan of it in the Result:
// Apply carries out exactly that plan. The stack is created when it does not exist yet.
func (r *Runner) Preview(ctx context.Context, st Stack, progress io.Writer) (Result, error) {
	ws, err := r.open(ctx, st, create)
	if err != nil {
		return Result{}, err
	}
	defer ws.close()
	plan := filepath.Join(ws.tmp, "plan-"+randomHex(8)+".json")
	defer os.Remove(plan)
	run, err := r.run(ctx, ws, progress, refreshing(st, "preview", "--parallel", parallel, "--save-plan", plan)...)
	out := Result{Changes: run.changes, Output: run.output, Drift: run.drift, Planned: run.plan.resources()}
	if err != nil {
		return out, err
	}
	if out.Plan, err = os.ReadFile(plan); err != nil {
		return out, fmt.Errorf("read the plan of %s: %w", st.Name, err)
	}
	return out, nil
}

// Up creates or updates the stack's resources to match the program and its inputs: one engine
// process previews the change and makes it, its events telling both.
func (r *Runner) Up(ctx context.Context, st Stack, progress io.Writer) (Result, error) {
	ws, err := r.open(ctx, st, createForUp)
	if err != nil {
		return Result{}, err
	}
	defer ws.close()
	res, err := r.up(ctx, ws, progress, refreshing(st)...)
	if ws.saltByEngine {
		if ferr := r.forgetUnrecordedSalt(ctx, st.Name); ferr != nil && err == nil {
			err = ferr
		}
	}
	return res, err
}

// Apply carries out a plan that Preview saved, without previewing again: the engine refuses any
// change the preview did not show (a resource's inputs that differ, an update where it planned
// none), and fails with an EngineError.
func (r *Runner) Apply(ctx context.Context, st Stack, plan []byte, progress io.Writer) (Result, error) {
	ws, err := r.open(ctx, st, create)
	if err != nil {
		return Result{}, err
	}
	defer ws.close()
	plan, err = looseStackOutputs(plan)
	if err == nil {
		// A plan saved before Nimbus named the project speaks of the program's.
		plan, err = adoptURNs(plan, st.Name)
	}
	if err != nil {
		return Result{}, fmt.Errorf("the plan of %s: %w", st.Name, err)
	}
	file := filepath.Join(ws.tmp, "plan-"+randomHex(8)+".json")
	if err := os.WriteFile(file, plan, 0o600); err != nil {
		return Result{}, fmt.Errorf("write the plan of %s: %w", st.Name, err)
	}
	defer os.Remove(file)
	return r.up(ctx, ws, progress, refreshing(st, "--skip-preview", "--plan", file)...)
}

// refreshing adds the flag that reads the resources back first, when the stack asks for it.
func refreshing(st Stack, args ...string) []string {
	if st.Refresh {
		return append(args, "--refresh")
	}
	return args
}

func (r *Runner) up(ctx context.Context, ws workspace, progress io.Writer, args ...string) (Result, error) {
	run, err := r.run(ctx, ws, progress, append([]string{"up", "--yes", "--parallel", parallel}, args...)...)
	out := Result{Outputs: run.outputs, Changes: run.changes, Output: run.output, Began: run.began, Drift: run.drift}
	if out.Outputs == nil {
		out.Outputs = map[string]any{}
	}
	if err == nil {
		if b, _ := json.Marshal(out.Outputs); len(b) > MaxOutputs {
			out.Outputs = map[string]any{}
			return out, tooLarge("up", fmt.Sprintf("the stack's outputs are %s, and a deployment's may be at most %s", Size(len(b)), Size(MaxOutputs)), out.Output)
		}
	}
	return out, err
}

// Refresh brings the stack's state in line with what the cloud actually has: resources deleted
// by hand leave the state, drifted properties are read back.
func (r *Runner) Refresh(ctx context.Context, st Stack, progress io.Writer) (Result, error) {
	ws, err := r.open(ctx, st, create)
	if err != nil {
		return Result{}, err
	}
	defer ws.close()
	run, err := r.run(ctx, ws, progress, "refresh", "--yes", "--skip-preview", "--parallel", parallel)
	return Result{Changes: run.changes, Output: run.output}, err
}

// DriftCheck reads the stack's resources back from the cloud and compares them with the
// state, changing neither: the refresh that `preview --refresh` begins with, without the
// program. Result.Drift lists the resources that differ; the progress's events are one per
// resource, update (properties differ, recorded → found), delete (gone) or same.
func (r *Runner) DriftCheck(ctx context.Context, st Stack, progress io.Writer) (Result, error) {
	ws, err := r.open(ctx, st, mustExist)
	if err != nil {
		return Result{}, err
	}
	defer ws.close()
	run, err := r.run(ctx, ws, progress, "refresh", "--preview-only", "--parallel", parallel)
	return Result{Changes: run.changes, Output: run.output, Drift: run.drift}, err
}

// Destroy deletes the stack's resources, then the stack itself from the backend and its working
// directory. A stack that does not exist is destroyed already, so Destroy can be repeated after
// a crash at any point.
func (r *Runner) Destroy(ctx context.Context, st Stack, progress io.Writer) (Result, error) {
	ws, err := r.open(ctx, st, mustExist)
	if errors.Is(err, ErrNoStack) {
		if err := r.forget(st.Name); err != nil {
			return Result{}, err
		}
		return Result{Changes: map[string]int{}, Output: fmt.Sprintf("no stack named %s: nothing to destroy", st.Name)}, nil
	} else if err != nil {
		return Result{}, err
	}
	defer ws.close()
	// --remove takes the stack out of the backend once its resources are gone; with resources
	// left, the backend keeps the only record of them, and the stack stays.
	// Its preview, within the same process, plans the delete of each resource for the pages.
	run, err := r.run(ctx, ws, progress, "destroy", "--yes", "--remove", "--parallel", parallel)
	out := Result{Changes: run.changes, Output: run.output}
	if err != nil {
		return out, err
	}
	return out, r.forget(st.Name)
}

// PreviewDestroy shows what Destroy would delete, deleting nothing: its events plan a delete of
// each resource. A stack that does not exist has nothing to delete.
func (r *Runner) PreviewDestroy(ctx context.Context, st Stack, progress io.Writer) (Result, error) {
	_, statErr := os.Stat(r.stackDir(st.Name))
	ws, err := r.open(ctx, st, mustExist)
	if errors.Is(err, ErrNoStack) {
		if errors.Is(statErr, fs.ErrNotExist) {
			_ = r.forget(st.Name) // looking must not leave a directory behind
		}
		return Result{Changes: map[string]int{}, Output: fmt.Sprintf("no stack named %s: nothing to destroy", st.Name)}, nil
	} else if err != nil {
		return Result{}, err
	}
	defer ws.close()
	run, err := r.run(ctx, ws, progress, "destroy", "--preview-only", "--parallel", parallel)
	return Result{Changes: run.changes, Output: run.output}, err
}

// Export returns the stack's state as the JSON `pulumi stack export` writes. Secrets in it stay
// encrypted.
func (r *Runner) Export(ctx context.Context, st Stack) ([]byte, error) {
	_, statErr := os.Stat(r.stackDir(st.Name))
	ws, err := r.open(ctx, st, mustExist)
	if errors.Is(err, ErrNoStack) && errors.Is(statErr, fs.ErrNotExist) {
		_ = os.RemoveAll(r.stackDir(st.Name)) // looking must not leave a directory behind
	}
	if err != nil {
		return nil, err
	}
	defer ws.close()
	stdout, stderr, _, err := r.exec(ctx, ws, nil, nil, "stack", "export", "--stack", st.Name)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("export %s: %w", st.Name, ctx.Err())
		}
		return nil, fmt.Errorf("export %s: %w: %s", st.Name, err, gist(stderr))
	}
	return []byte(stdout), nil
}

// streams sends the engine's output to progress as it comes, and keeps its tail for the Result,
// the server's directories replaced in both (see redactor). The CLI's stdout and stderr are
// copied by two goroutines, so writes are serialised. Flush the returned redacting at the end.
func (r *Runner) streams(progress io.Writer, rep *strings.Replacer) (*tail, *redacting, io.Writer) {
	said := &tail{max: 256 << 10}
	to := io.Writer(said)
	if progress != nil {
		to = io.MultiWriter(progress, said)
	}
	red := &redacting{w: to, rep: rep}
	return said, red, &serial{w: red}
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

func (t *tail) text() string { return quiet(strings.ToValidUTF8(t.String(), "")) }

// failure sorts an operation's error for the caller: cancelled (the caller decides), locked
// (Stack.Exclusive clears what a crashed engine left), refused by the engine (retrying as is
// will not), or anything else.
func failure(ctx context.Context, op, stack string, err error, output string) error {
	if ctx.Err() != nil {
		return fmt.Errorf("pulumi %s of %s: %w", op, stack, ctx.Err())
	}
	if strings.Contains(output, "the stack is currently locked by") {
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
	return fmt.Errorf("pulumi %s of %s: %w", op, stack, err)
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
