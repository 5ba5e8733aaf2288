package freeport

import (
	"net"
	"strconv"
	"testing"

	"nimbus/app/kernel/sandbox"
)

// Picked ports are distinct, free and below the ephemeral range.
func TestPick_FreePortsBelowTheEphemeralRange(t *testing.T) {
	first, _ := sandbox.EphemeralRange()
	ports, err := Pick(5)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p < lowest || p >= int(first) || seen[p] {
			t.Fatalf("picked %v: want 5 distinct ports in [%d, %d)", ports, lowest, first)
		}
		seen[p] = true
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d is not free: %v", p, err)
		}
		l.Close()
	}
}
