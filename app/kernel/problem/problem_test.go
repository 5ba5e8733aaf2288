package problem_test

import (
	"testing"

	"nimbus/app/kernel/problem"
)

func TestWithin_APathLiesUnderItsParentsAlone(t *testing.T) {
	cases := []struct {
		field, parent, rest string
		ok                  bool
	}{
		{"parameters.cores", "parameters", "cores", true},
		{"parameters.disk.size", "parameters", "disk.size", true},
		{"parameters", "parameters", "", true},
		{"parametersx", "parameters", "", false},
		{"name", "parameters", "", false},
		{"slots.web.parameters.cores", "slots.web", "parameters.cores", true},
	}
	for _, c := range cases {
		if rest, ok := problem.Within(c.field, c.parent); rest != c.rest || ok != c.ok {
			t.Errorf("Within(%q, %q) = %q, %v; want %q, %v", c.field, c.parent, rest, ok, c.rest, c.ok)
		}
	}
}
