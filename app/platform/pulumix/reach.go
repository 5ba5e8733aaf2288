package pulumix

import (
	"context"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"nimbus/app/kernel/sandbox"
)

// What an engine run may reach beyond its own stack's directories: the toolchain's binaries
// to execute, the clouds to write (a deployment's, never a check's), and the TCP ports its
// provider needs.

// dnsPort is where name servers answer over TCP, which a provider may need to find its cloud.
const dnsPort = 53

// toolchainPrograms are the files engine processes may execute: the CLI, the language hosts and
// the provider plugins in the directories the engine finds programs in (see programDirs).
// Nothing else runs: no shell, no other program on PATH.
func toolchainPrograms(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		entries, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if name := e.Name(); name == "pulumi" || strings.HasPrefix(name, "pulumi-language-") || strings.HasPrefix(name, "pulumi-resource-") {
				out = append(out, filepath.Join(d, name))
			}
		}
	}
	return out
}

// linkedDynamically reports whether program needs a dynamic loader: the sandbox lets the
// engine execute its own binaries only, and the loader can run any file it may read, so the
// loader is not among them and such a program cannot start.
func linkedDynamically(program string) bool {
	f, err := elf.Open(program)
	if err != nil {
		return false // not ELF (a script): it fails on its interpreter, with its own words
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return true
		}
	}
	return false
}

// runnable keeps of programs those the confined engine can start. The CLI or a language host
// that cannot start leaves no engine at all, an error; a provider plugin that cannot is left
// out, said in the log, and only its deployments fail.
func (r *Runner) runnable(programs []string) ([]string, error) {
	if !r.cli.sandbox.Confined() {
		return programs, nil
	}
	var out []string
	for _, p := range programs {
		switch {
		case !linkedDynamically(p):
			out = append(out, p)
		case strings.HasPrefix(filepath.Base(p), "pulumi-resource-"):
			r.log.Error("a provider plugin is linked dynamically, and the engine's sandbox executes only static binaries: its deployments will fail; build it with CGO_ENABLED=0",
				"plugin", p)
		default:
			return nil, fmt.Errorf("%s is linked dynamically, and the engine's sandbox lets it execute only the toolchain's own static binaries: build it with CGO_ENABLED=0 (or, for diagnosis only, set NIMBUS_SANDBOX=off)", p)
		}
	}
	return out, nil
}

// WithClosedPorts keeps engine processes from connecting to these TCP ports even where they
// fall in the range the engine's own processes listen on: the database's and the object
// store's. The ports Nimbus itself listens on are closed without being named.
func WithClosedPorts(ports ...uint16) Option {
	return func(r *Runner) { r.closed = append(r.closed, ports...) }
}

// reach is what a run of the engine on ws may reach beyond the directories its environment
// names.
func (r *Runner) reach(ws workspace) (sandbox.Policy, error) {
	ports, err := r.ports.of(ws.ports, r.closed)
	if err != nil {
		return sandbox.Policy{}, err
	}
	p := sandbox.Policy{Connect: ports}
	if !ws.scratch {
		p.Write = r.clouds
	}
	return p, nil
}

// Expect readies the sandbox of an engine run on st's stack that is about to come: confining
// the engine's first process costs milliseconds, spent in the background while the caller does
// other work (see sandbox.Prepare). The run finds it ready when nothing it may reach changed
// meanwhile, and confines its own otherwise. A stack given credentials in files is not
// readied: its engine's temporary directory is made when it runs.
func (r *Runner) Expect(st Stack) {
	if holdsProviderSecret(st) || checkStack(st, false) != nil {
		return
	}
	dir := r.stackDir(st.Name)
	h, err := home(dir)
	if err != nil {
		return // the run says why
	}
	state, err := r.stateOf(st.Name)
	if err != nil {
		return
	}
	ws := workspace{stack: st.Name, dir: dir, tmp: filepath.Join(h, "tmp"), state: state.Root(), ports: st.Ports,
		env: r.engineEnv(state.Root(), "", h)}
	reach, err := r.reach(ws)
	if err != nil {
		return
	}
	r.cli.Prepare(ws.dir, reach, ws.env)
}

// exec runs the CLI on ws's stack, in the sandbox with what the run may reach, as the engine's
// account where it has one: what Nimbus wrote into the stack's directories for it is handed
// over first.
func (r *Runner) exec(ctx context.Context, ws workspace, out, errOut []io.Writer, args ...string) (string, string, process, error) {
	reach, err := r.reach(ws)
	if err != nil {
		return "", "", process{code: -2}, err
	}
	mine := append([]string{ws.dir, ws.state, ws.tmp}, reach.Write...)
	if err := r.own(mine...); err != nil {
		return "", "", process{code: -2}, err
	}
	return r.cli.Run(ctx, ws.dir, reach, nil, out, errOut, ws.env, args...)
}

// portSets makes the sets of ports engine runs may connect to, and keeps the last few: every
// run of one provider and zone gets the same set, and the sandbox makes its ruleset once.
type portSets struct {
	mu   sync.Mutex
	sets map[string]*sandbox.Ports
}

// of is the set a run whose provider needs the given ports may connect to: those, name
// servers, and the range the engine's own processes listen in; never a closed port, nor one
// this process listens on.
func (s *portSets) of(need, closed []uint16) (*sandbox.Ports, error) {
	listening, err := sandbox.Listening()
	if err != nil {
		return nil, fmt.Errorf("the ports Nimbus listens on: %w", err)
	}
	slices.Sort(listening)
	key := fmt.Sprint(need, closed, listening)
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.sets[key]; ok {
		return p, nil
	}
	first, last := sandbox.EphemeralRange()
	open := make([]uint16, 0, int(last-first)+2+len(need))
	for p := int(first); p <= int(last); p++ {
		if !slices.Contains(closed, uint16(p)) {
			open = append(open, uint16(p))
		}
	}
	open = append(append(open, dnsPort), need...)
	// Closed last: a provider said to need the database's port does not get it.
	open = slices.DeleteFunc(open, func(p uint16) bool { return slices.Contains(listening, p) || slices.Contains(closed, p) })
	if s.sets == nil || len(s.sets) >= 64 {
		s.sets = map[string]*sandbox.Ports{}
	}
	ports := sandbox.NewPorts(open...)
	s.sets[key] = ports
	return ports, nil
}
