package approval

import (
	"slices"
	"testing"
)

// The list's filter offers exactly the statuses a request can have: a status the machine gains
// is one a person can filter by, and the menu names none it lacks.
func TestStatuses_AreTheMachines(t *testing.T) {
	var states []string
	for _, s := range Machine.States() {
		states = append(states, string(s))
	}
	offered := slices.Sorted(slices.Values(Statuses))
	if !slices.Equal(offered, states) {
		t.Fatalf("the filter offers %v; the machine's states are %v", offered, states)
	}
}
