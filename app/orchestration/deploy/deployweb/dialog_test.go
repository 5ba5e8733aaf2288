package deployweb

import (
	"slices"
	"testing"

	"nimbus/app/domain/governance"
)

func TestParamForm_GovernanceStandsBesideTheFieldItBinds(t *testing.T) {
	two, ten, hundred := 2.0, 10.0, 100.0
	limits := map[string]governance.Limits{
		// The schema allows 1 to 8 cores: a minimum of 2 binds, a maximum of 10 does not. It
		// sets no maximum for the ratio, so the provider's binds.
		"cores": {Minimum: &governance.Bound{Value: two, SetBy: governance.Tenant}, Maximum: &governance.Bound{Value: ten, SetBy: governance.Provider}},
		"ratio": {Maximum: &governance.Bound{Value: hundred, SetBy: governance.Provider}},
		"size":  {Allowed: &governance.Choice{Values: []any{"s", "m"}, SetBy: governance.Both}},
		"name":  {Patterns: []governance.Match{{Pattern: "^web", SetBy: governance.Tenant}}},
	}
	f := paramForm([]byte(formSchema), nil, nil, nil, nil, false, limits)
	want := map[string]string{
		"cores": "At least 2, set by your tenant's admins.",
		"ratio": "At most 100, set by the provider.",
		"size":  "The choices are set by the provider and your tenant's admins.",
		"name":  "Must match ^web, set by your tenant's admins.",
	}
	for _, p := range f.Fields {
		if p.Limits != want[p.Name] {
			t.Errorf("%s: limits %q, want %q", p.Name, p.Limits, want[p.Name])
		}
		switch p.Name {
		case "cores":
			if p.Min != "2" || p.Max != "8" || !p.HasDefault {
				t.Errorf("cores: [%s, %s] default=%v", p.Min, p.Max, p.HasDefault)
			}
		case "size":
			if !slices.Equal(p.Options, []string{"s", "m"}) || p.HasDefault {
				t.Errorf("size: %q default=%v", p.Options, p.HasDefault)
			}
		}
	}
}

func TestPlanSummary_CountsWhatDeployingWouldDo(t *testing.T) {
	for _, c := range []struct {
		ops  []string
		want string
	}{
		{nil, "Deploying would change nothing."},
		{[]string{"same", "same"}, "Deploying would change nothing."},
		{[]string{"create", "create"}, "Deploying would create 2 resources."},
		{[]string{"update", "create", "delete", "same"}, "Deploying would create 1 resource, update 1 resource, delete 1 resource."},
	} {
		var rows []PlanRow
		for _, op := range c.ops {
			rows = append(rows, PlanRow{Op: op})
		}
		if got := planSummary(rows); got != c.want {
			t.Errorf("%v: %q, want %q", c.ops, got, c.want)
		}
	}
}
