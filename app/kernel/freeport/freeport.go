// Package freeport picks loopback TCP ports for the servers tests start as processes of their
// own (Nimbus, an API server, etcd). A port the kernel hands out for port 0 is released before
// the server binds it, and meanwhile the kernel may hand it to anything else that asks: an
// outgoing connection, or a plugin listening on port 0. Ports below the kernel's ephemeral range
// are never handed out that way, so a port picked there stays free for the server that binds it
// a moment later, unless another pick takes it.
package freeport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"testing"

	"nimbus/app/kernel/sandbox"
)

// lowest is the lowest port picked: below it live the well-known and registered services.
const lowest = 10000

// Pick returns n distinct free loopback ports from below the ephemeral range.
func Pick(n int) ([]int, error) {
	first, _ := sandbox.EphemeralRange()
	if int(first) <= lowest+n {
		return nil, fmt.Errorf("the ephemeral range starts at %d: no ports below it to pick from", first)
	}
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries == 1000 {
			return nil, errors.New("no free port below the ephemeral range after 1000 tries")
		}
		port := lowest + rand.IntN(int(first)-lowest)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue // taken
		}
		held = append(held, l)
		ports = append(ports, port)
	}
	return ports, nil
}

// Addr is a free loopback address, host and port, for a server test t starts.
func Addr(t testing.TB) string {
	t.Helper()
	ports, err := Pick(1)
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
}
