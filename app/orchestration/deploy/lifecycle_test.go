package deploy

import (
	"context"
	"regexp"
	"slices"
	"testing"

	"nimbus/db/dbtest"
)

// The kinds a list may be filtered by are exactly those the schema allows; the statuses are the
// machines' (app/kernel/lifecycle).
func TestLifecycle_TypesMatchTheSchema(t *testing.T) {
	pool := dbtest.Pool(t)
	cases := []struct {
		constraint string
		names      []string
	}{
		{"operations_kind_check", slices.Clone(kinds)},
	}
	quoted := regexp.MustCompile(`'([a-z_]+)'`)
	for _, c := range cases {
		var def string
		if err := pool.QueryRow(context.Background(), `SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = $1`, c.constraint).Scan(&def); err != nil {
			t.Fatalf("%s: %v", c.constraint, err)
		}
		var allowed []string
		for _, m := range quoted.FindAllStringSubmatch(def, -1) {
			allowed = append(allowed, m[1])
		}
		slices.Sort(allowed)
		slices.Sort(c.names)
		if !slices.Equal(allowed, c.names) {
			t.Errorf("%s allows %v; the code names %v", c.constraint, allowed, c.names)
		}
	}
}

// The statuses a list may be filtered by are every status of their machines.
func TestLifecycle_FiltersNameEveryStatus(t *testing.T) {
	for _, c := range []struct {
		filter []string
		states []string
	}{
		{operationStatuses, OperationMachine.Describe().States},
		{deploymentStatuses, DeploymentMachine.Describe().States},
	} {
		if got := slices.Sorted(slices.Values(c.filter)); !slices.Equal(got, c.states) {
			t.Errorf("the filter offers %v; the machine has %v", got, c.states)
		}
	}
}
