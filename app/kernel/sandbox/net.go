package sandbox

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Landlock tells TCP connections apart by port alone, never by address. The engine's
// processes speak gRPC to each other on loopback, each listening on a port the kernel picks
// from its ephemeral range, so an engine must reach that range; a provider reaches its cloud on
// the ports its zone declares. Every other port is closed: Nimbus's own (8080), Postgres's
// (5432), the object store's. Where Nimbus or a server it uses listens inside the ephemeral
// range itself, that port is taken out of it.

// Ports is a set of TCP ports. Its Landlock ruleset is made once and kept by the Sandbox: the
// ephemeral range alone is some 28,000 rules, ten milliseconds to make.
type Ports struct {
	list []uint16
	key  string
}

// NewPorts is the set of the given ports.
func NewPorts(ports ...uint16) *Ports {
	list := slices.Clone(ports)
	slices.Sort(list)
	list = slices.Compact(list)
	var key strings.Builder
	for _, p := range list {
		key.WriteString(strconv.Itoa(int(p)))
		key.WriteByte(',')
	}
	return &Ports{list: list, key: key.String()}
}

// EphemeralRange is the range of local ports the kernel picks from for a listener that asks for
// any port, as /proc/sys/net/ipv4/ip_local_port_range says (Linux's default when unreadable).
func EphemeralRange() (first, last uint16) {
	first, last = 32768, 60999
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return first, last
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return first, last
	}
	lo, err1 := strconv.ParseUint(f[0], 10, 16)
	hi, err2 := strconv.ParseUint(f[1], 10, 16)
	if err1 != nil || err2 != nil || lo > hi {
		return first, last
	}
	return uint16(lo), uint16(hi)
}

// Listening lists the TCP ports this process listens on, on any address: a confined process
// must never reach them, even where they fall in the ephemeral range (a test's servers do).
// Each of its own sockets is asked directly: the system's table of TCP sockets lists every
// connection of the machine, and reading it costs milliseconds on a busy one.
func Listening() ([]uint16, error) {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil, err
	}
	var ports []uint16
	for _, entry := range fds {
		fd, err := strconv.Atoi(entry.Name())
		if err != nil {
			continue
		}
		// A descriptor closed since the listing, or reused for another file, answers for
		// what it is now: a listener opened after the listing is missed either way.
		if target, err := os.Readlink("/proc/self/fd/" + entry.Name()); err != nil || !strings.HasPrefix(target, "socket:[") {
			continue
		}
		// Streams of the Internet's families: TCP, or Multipath TCP, which Go's listeners use
		// where the kernel has it.
		if typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE); err != nil || typ != unix.SOCK_STREAM {
			continue
		}
		if on, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN); err != nil || on == 0 {
			continue
		}
		switch sa, _ := unix.Getsockname(fd); a := sa.(type) {
		case *unix.SockaddrInet4:
			ports = append(ports, uint16(a.Port))
		case *unix.SockaddrInet6:
			ports = append(ports, uint16(a.Port))
		}
	}
	return ports, nil
}

// netRulesets keeps the Landlock rulesets of the sets of ports confined processes were given,
// by set: few sets are ever in use (one per kind of provider and zone), and each is costly to
// make. Past maxRulesets it starts again empty.
type netRulesets struct {
	mu  sync.Mutex
	fds map[string]int
}

const maxRulesets = 64

// get returns the ruleset that lets a process connect to ports and nowhere else by TCP, as a
// descriptor of the caller's own to close.
func (n *netRulesets) get(ports *Ports) (int, error) {
	if n == nil {
		return netRuleset(ports) // a Sandbox made without New keeps none
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if fd, ok := n.fds[ports.key]; ok {
		return dupCloexec(fd)
	}
	if len(n.fds) >= maxRulesets {
		for k, fd := range n.fds {
			unix.Close(fd)
			delete(n.fds, k)
		}
	}
	fd, err := netRuleset(ports)
	if err != nil {
		return -1, err
	}
	n.fds[ports.key] = fd
	return dupCloexec(fd)
}

// dupCloexec is a copy of fd that no child inherits: a process that held the ruleset's
// descriptor could add rules to it, opening ports for every engine given the same set.
func dupCloexec(fd int) (int, error) { return unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0) }

func netRuleset(ports *Ports) (int, error) {
	rules := make([]landlock.Rule, 0, len(ports.list))
	for _, p := range ports.list {
		rules = append(rules, landlock.ConnectTCP(p))
	}
	cfg := landlock.Config{HandledAccessNet: llsyscall.AccessNetConnectTCP}
	fd, _, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return -1, fmt.Errorf("sandbox: landlock network ruleset: %s", strings.TrimPrefix(err.Error(), "landlock: "))
	}
	return fd, nil
}
