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
// engine's account) and waits to start one command. Confining one costs milliseconds: the
// kernel copies every rule of a domain's layers into each new domain, and the network's layer
// holds some 28,000. So a caller that knows a command is coming asks for its thread first
// (Prepare), and it is confined while the caller does other work: an operation reads the
// database before it runs its engine.
type thread struct {
	key  string
	cmds chan *exec.Cmd
	done chan error // the command started, or why the thread could not start it
}

// confine makes a thread confined to p, to start one command; prepared, when set, holds it
// until then, and lets it go when nobody asks for it in time.
func (s Sandbox) confine(p Policy, prepared *preparedThreads) *thread {
	t := &thread{key: p.key(), cmds: make(chan *exec.Cmd), done: make(chan error, 1)}
	if prepared != nil && !prepared.put(t) {
		return nil
	}
	go onThreadOfItsOwn(func() {
		if err := s.restrict(p); err != nil {
			prepared.remove(t)
			t.done <- err // the thread ends with whatever it took on
			return
		}
		var cmd *exec.Cmd
		select {
		case cmd = <-t.cmds:
		case <-time.After(preparedFor):
			if prepared.remove(t) {
				return
			}
			cmd = <-t.cmds // taken just now: its command is on its way
		}
		t.done <- launch(cmd, p.Limits)
	})
	return t
}

// start starts cmd from the thread, once it is confined.
func (t *thread) start(cmd *exec.Cmd) error {
	select {
	case t.cmds <- cmd:
		return <-t.done
	case err := <-t.done:
		return err
	}
}

// Prepare confines a thread to s.Base and p, as Start would, for a command about to be started
// under the same policy: Start then takes it and starts the command at once. A thread nobody
// asks for within a minute is let go. A policy whose paths change before Start (a directory
// made anew) is not the same policy: Start confines a thread of its own.
func (s Sandbox) Prepare(p Policy) {
	if s.Mode == "" || s.Mode == Off || s.prepared == nil {
		return
	}
	s.confine(s.Base.Union(p), s.prepared)
}

// preparedFor is how long a prepared thread waits for its command.
const preparedFor = time.Minute

// maxPrepared bounds the threads waiting for a command: each is an OS thread. One is prepared
// for a policy at a time.
const maxPrepared = 16

// preparedThreads are the threads confined ahead of their commands.
type preparedThreads struct {
	mu   sync.Mutex
	list []*thread
}

func (pt *preparedThreads) put(t *thread) bool {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	if len(pt.list) >= maxPrepared || slices.ContainsFunc(pt.list, func(o *thread) bool { return o.key == t.key }) {
		return false
	}
	pt.list = append(pt.list, t)
	return true
}

// take removes and returns a thread prepared for the policy of key, or nil.
func (pt *preparedThreads) take(key string) *thread {
	if pt == nil {
		return nil
	}
	pt.mu.Lock()
	defer pt.mu.Unlock()
	i := slices.IndexFunc(pt.list, func(t *thread) bool { return t.key == key })
	if i < 0 {
		return nil
	}
	t := pt.list[i]
	pt.list = slices.Delete(pt.list, i, i+1)
	return t
}

// remove takes t out of the list, and says whether it was still there: false means somebody
// took it, and its command is coming.
func (pt *preparedThreads) remove(t *thread) bool {
	if pt == nil {
		return false
	}
	pt.mu.Lock()
	defer pt.mu.Unlock()
	i := slices.Index(pt.list, t)
	if i < 0 {
		return false
	}
	pt.list = slices.Delete(pt.list, i, i+1)
	return true
}

// key says what a thread confined to p may reach. Landlock holds a path's rule by the file it
// named when the rule was made, so each path is told by its file too: a directory removed and
// made again since a thread was prepared is another directory.
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
