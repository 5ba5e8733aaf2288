package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A confined thread is an OS thread that has taken on a policy (its Landlock layers, the
// engine's account) and starts commands under it. Confining one costs milliseconds of the
// kernel's time: it copies every rule of a domain's layers into each new domain, and the
// network's layer holds some 28,000. So a thread is kept for a while after its command starts,
// for the next command under the same policy (the next operation on the same stack), and a
// caller that knows a command is coming asks for its thread first (Prepare), to be confined
// while the caller does other work: an operation reads the database before its engine runs.
type thread struct {
	key  string
	cmds chan launch
	// ended is closed when the thread ends: it could not be confined (err says why), or nobody
	// asked for it in time.
	ended chan struct{}
	err   error
}

// launch asks a confined thread to start cmd, and tells started how that went.
type launch struct {
	cmd     *exec.Cmd
	started chan error
}

// keptFor is how long a confined thread waits for a command.
const keptFor = time.Minute

// maxKept bounds the confined threads waiting for a command: each is an OS thread. One waits
// for a policy at a time.
const maxKept = 16

func newThread(p Policy) *thread {
	return &thread{key: p.key(), cmds: make(chan launch), ended: make(chan struct{})}
}

// run confines t to p on an OS thread of its own and starts the commands it is given, until
// nobody has asked for one for keptFor, or there is no room to keep it.
func (s Sandbox) run(t *thread, p Policy) {
	go onThreadOfItsOwn(func() {
		defer close(t.ended)
		if t.err = s.restrict(p); t.err != nil {
			s.kept.remove(t)
			return // the thread ends with whatever it took on
		}
		for {
			select {
			case l := <-t.cmds:
				l.started <- start(l.cmd, p.Limits)
				if !s.kept.put(t) {
					return
				}
			case <-time.After(keptFor):
				if s.kept.remove(t) {
					return
				}
				// Taken just now: its command is on its way.
			}
		}
	})
}

// start starts cmd from t, once t is confined.
func (t *thread) start(cmd *exec.Cmd) error {
	l := launch{cmd: cmd, started: make(chan error, 1)}
	select {
	case t.cmds <- l:
		return <-l.started
	case <-t.ended:
		if t.err != nil {
			return t.err
		}
		return fmt.Errorf("sandbox: the confined thread ended before it started %s", cmd.Path)
	}
}

// Prepare confines a thread to s.Base and p, as Start would, for a command about to be started
// under the same policy: Start then takes it and starts the command at once. A thread nobody
// asks for within a minute is let go. A policy whose paths change before Start (a directory
// made anew) is not the same policy: Start confines a thread of its own.
func (s Sandbox) Prepare(p Policy) {
	if s.Mode == "" || s.Mode == Off || s.kept == nil {
		return
	}
	p = s.Base.Union(p)
	if t := newThread(p); s.kept.put(t) {
		s.run(t, p)
	}
}

// keptThreads are the confined threads waiting for a command.
type keptThreads struct {
	mu   sync.Mutex
	list []*thread
}

// put keeps t for a command under its policy, unless there is no room or a thread waits for
// that policy already.
func (k *keptThreads) put(t *thread) bool {
	if k == nil {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.list) >= maxKept || slices.ContainsFunc(k.list, func(o *thread) bool { return o.key == t.key }) {
		return false
	}
	k.list = append(k.list, t)
	return true
}

// take removes and returns the thread waiting for the policy of key, or nil.
func (k *keptThreads) take(key string) *thread {
	if k == nil {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	i := slices.IndexFunc(k.list, func(t *thread) bool { return t.key == key })
	if i < 0 {
		return nil
	}
	t := k.list[i]
	k.list = slices.Delete(k.list, i, i+1)
	return t
}

// remove takes t out of the list, and says whether it was still there: false means somebody
// took it, and its command is coming.
func (k *keptThreads) remove(t *thread) bool {
	if k == nil {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	i := slices.Index(k.list, t)
	if i < 0 {
		return false
	}
	k.list = slices.Delete(k.list, i, i+1)
	return true
}

// key says what a thread confined to p may reach. Landlock holds a path's rule by the file it
// named when the rule was made, so each path is told by its file too: a directory removed and
// made again since a thread was confined is another directory.
func (p Policy) key() string {
	var b strings.Builder
	paths := func(name string, list []string) {
		b.WriteString(name)
		for _, path := range slices.Sorted(slices.Values(list)) {
			id := "-"
			if info, err := os.Stat(path); err == nil {
				if st, ok := info.Sys().(*syscall.Stat_t); ok {
					id = fmt.Sprintf("%d:%d", st.Dev, st.Ino)
				}
			}
			fmt.Fprintf(&b, " %s@%s", path, id)
		}
		b.WriteByte('\n')
	}
	paths("read", p.Read)
	paths("exec", p.Exec)
	paths("write", p.Write)
	paths("readfiles", p.ReadFiles)
	paths("writefiles", p.WriteFiles)
	if p.Connect != nil {
		fmt.Fprintf(&b, "connect %s\n", p.Connect.key)
	}
	fmt.Fprintf(&b, "limits %+v\n", p.Limits)
	return b.String()
}
