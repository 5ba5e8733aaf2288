package sandbox

import (
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func listen(t *testing.T) (net.Listener, uint16) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln, uint16(ln.Addr().(*net.TCPAddr).Port)
}

// connects reports whether a confined bash opened a TCP connection to port.
func connects(t *testing.T, s Sandbox, p Policy, port uint16) (bool, string) {
	t.Helper()
	cmd := exec.Command("/bin/bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/"+strconv.Itoa(int(port))+" && echo connected")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	p.Exec = append(p.Exec, "/bin/bash", "/lib64/ld-linux-x86-64.so.2")
	if err := s.Start(cmd, p); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	return err == nil && strings.Contains(out.String(), "connected"), strings.TrimSpace(out.String())
}

// A confined process connects to the TCP ports it is given and to no other, on any address.
func TestSandbox_ConnectsOnlyToItsPorts(t *testing.T) {
	if ABI() < netABI {
		t.Fatalf("TCP rules need Landlock ABI %d; this kernel has %d", netABI, ABI())
	}
	_, open := listen(t)
	_, closed := listen(t)
	p := Policy{Connect: NewPorts(open)}
	if ok, out := connects(t, required, p, open); !ok {
		t.Fatalf("the port it was given: %s", out)
	}
	if ok, out := connects(t, required, p, closed); ok || !strings.Contains(strings.ToLower(out), "permission denied") {
		t.Fatalf("another port: connected=%v %q", ok, out)
	}
	// The set's ruleset is kept, and serves the next process as the first.
	if ok, _ := connects(t, required, p, closed); ok {
		t.Fatal("another port, the second time")
	}
	// Unconfined, the same connection is made: the refusal is the sandbox's.
	if ok, out := connects(t, Sandbox{Mode: Off}, p, closed); !ok {
		t.Fatalf("unconfined: %s", out)
	}
}

func TestListening_FindsThisProcesssListeners(t *testing.T) {
	_, port := listen(t)
	ln6, err := net.Listen("tcp6", "[::1]:0")
	var port6 uint16
	if err == nil {
		t.Cleanup(func() { ln6.Close() })
		port6 = uint16(ln6.Addr().(*net.TCPAddr).Port)
	}
	// A connection's own end, and a UDP socket, listen for nothing.
	conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := uint16(conn.LocalAddr().(*net.TCPAddr).Port)
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	got, err := Listening()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(got, port) || port6 != 0 && !slices.Contains(got, port6) {
		t.Fatalf("listening on %d and %d, found %v", port, port6, got)
	}
	if slices.Contains(got, client) {
		t.Fatalf("the client end of a connection, port %d, counted as listening: %v", client, got)
	}
	if p := uint16(udp.LocalAddr().(*net.UDPAddr).Port); slices.Contains(got, p) && p != port && p != port6 {
		t.Fatalf("a UDP socket on %d counted as a TCP listener: %v", p, got)
	}
}

func TestEphemeralRange_IsTheKernels(t *testing.T) {
	first, last := EphemeralRange()
	ln, port := listen(t)
	defer ln.Close()
	if first >= last || port < first || port > last {
		t.Fatalf("range %d-%d, a listener on any port got %d", first, last, port)
	}
}

// The descriptor of a ruleset kept for reuse never reaches a child: a process holding it could
// add rules, opening ports for every later engine given the same set.
func TestNetRulesets_AreNotInherited(t *testing.T) {
	if ABI() < netABI {
		t.Fatalf("TCP rules need Landlock ABI %d; this kernel has %d", netABI, ABI())
	}
	n := &netRulesets{fds: map[string]int{}}
	for range 2 { // made, then reused
		fd, err := n.get(NewPorts(1234))
		if err != nil {
			t.Fatal(err)
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		unix.Close(fd)
		if err != nil || flags&unix.FD_CLOEXEC == 0 {
			t.Fatalf("the ruleset's descriptor would be inherited: flags %d, %v", flags, err)
		}
	}
}
