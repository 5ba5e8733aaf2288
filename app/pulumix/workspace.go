package pulumix

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/config"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"

	"nimbus/app/objstore"
)

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
		err := r.clearLock(st)
		if err != nil && !errors.Is(err, ErrLocked) {
			// Its own minute ran out, not the caller's time: the error must not read as the
			// caller's deadline, which would make it final.
			err = errors.New(err.Error())
		}
		if err != nil {
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
