package e2e

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// execs tells of every program any process of the machine starts, as the kernel stamps the
// start: its process events (the netlink process connector), which arrive without polling, so
// that watching costs the machine nothing while the server works, and carry the moment of the
// exec rather than of the watcher's look.
type execs struct {
	fd int
	// wall and mono are one moment on the wall clock, with Go's monotonic reading, and on the
	// kernel's monotonic clock, which stamps the events.
	wall time.Time
	mono time.Duration

	mu       sync.Mutex
	watchers []*execWatch
}

// execWatch waits for the first exec of a program matching want.
type execWatch struct {
	want  func(name, cwd string) bool
	found chan time.Time
}

// The process connector's numbers (linux/connector.h, linux/cn_proc.h).
const (
	cnIdxProc         = 1
	cnValProc         = 1
	procCnMcastListen = 1
	procEventExec     = 2
	nlmsgHeader       = 16
	cnMsgHeader       = 20
)

// listenExecs subscribes to the kernel's process events; it needs CONFIG_PROC_EVENTS and
// CAP_NET_ADMIN, as root has.
func listenExecs() (*execs, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_CONNECTOR)
	if err != nil {
		return nil, fmt.Errorf("the kernel's process events: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: cnIdxProc}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("the kernel's process events: %w", err)
	}
	// A netlink message holding a connector message whose payload asks for the events.
	msg := make([]byte, nlmsgHeader+cnMsgHeader+4)
	le := binary.LittleEndian
	le.PutUint32(msg[0:], uint32(len(msg)))
	le.PutUint16(msg[4:], unix.NLMSG_DONE)
	le.PutUint32(msg[12:], uint32(os.Getpid()))
	le.PutUint32(msg[16:], cnIdxProc)
	le.PutUint32(msg[20:], cnValProc)
	le.PutUint16(msg[32:], 4)
	le.PutUint32(msg[36:], procCnMcastListen)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("subscribe to the kernel's process events: %w", err)
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		unix.Close(fd)
		return nil, err
	}
	e := &execs{fd: fd, wall: time.Now(), mono: time.Duration(ts.Nano())}
	go e.read()
	return e, nil
}

// Close stops the events; waits not yet answered never will be.
func (e *execs) Close() { unix.Close(e.fd) }

// watch returns a channel that receives when the first program matching want starts after
// now: the moment of its exec, on the clock of time.Now.
func (e *execs) watch(want func(name, cwd string) bool) <-chan time.Time {
	w := &execWatch{want: want, found: make(chan time.Time, 1)}
	e.mu.Lock()
	e.watchers = append(e.watchers, w)
	e.mu.Unlock()
	return w.found
}

func (e *execs) read() {
	buf := make([]byte, 1<<16)
	for {
		n, _, err := unix.Recvfrom(e.fd, buf, 0)
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.ENOBUFS) {
			continue // a burst of events overran the socket: those were others' anyway
		}
		if err != nil {
			return
		}
		for msg := buf[:n]; len(msg) >= nlmsgHeader; {
			size := int(binary.LittleEndian.Uint32(msg))
			if size < nlmsgHeader || size > len(msg) {
				break
			}
			e.event(msg[nlmsgHeader:size])
			msg = msg[(size+3)&^3:]
		}
	}
}

// event reads one connector message: an exec is told to the watchers it matches.
func (e *execs) event(cn []byte) {
	le := binary.LittleEndian
	if len(cn) < cnMsgHeader+24 || le.Uint32(cn[0:]) != cnIdxProc {
		return
	}
	ev := cn[cnMsgHeader:]
	if le.Uint32(ev[0:]) != procEventExec {
		return
	}
	at := e.wall.Add(time.Duration(le.Uint64(ev[8:])) - e.mono)
	pid := fmt.Sprint(le.Uint32(ev[16:]))
	name, err := program(pid)
	if err != nil {
		return // it ended already
	}
	cwd, _ := os.Readlink("/proc/" + pid + "/cwd")
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, w := range e.watchers {
		if w.want(name, cwd) {
			w.found <- at
			e.watchers = append(e.watchers[:i], e.watchers[i+1:]...)
			return
		}
	}
}

func TestExecs_TellOfAProgramWhenItStarts(t *testing.T) {
	ex, err := listenExecs()
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	dir := t.TempDir()
	found := ex.watch(func(name, cwd string) bool { return name == "sleep" && cwd == dir })
	before := time.Now()
	cmd := exec.Command("sleep", "1")
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	select {
	case at := <-found:
		if at.Before(before) || at.After(time.Now()) {
			t.Fatalf("the exec is stamped %v after the watch began, outside the time it was made in", at.Sub(before))
		}
	case <-time.After(time.Minute):
		t.Fatal("no exec of sleep told in a minute")
	}
}
