package apptest

import (
	"testing"
	"time"
)

// WaitPolled waits until a poll has seen the resource in the state given.
func (s *Site) WaitPolled(t *testing.T, resource, state string) {
	t.Helper()
	var got string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		_ = s.Pool.QueryRow(t.Context(), `SELECT state FROM event_poller_state WHERE resource = $1`, resource).Scan(&got)
		if got == state {
			return
		}
	}
	t.Fatalf("the poller saw %s as %q, want %q", resource, got, state)
}
