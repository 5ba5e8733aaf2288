package deploy

import (
	"reflect"
	"testing"
)

func TestSpans_EngineBoldMarkersBecomeBold(t *testing.T) {
	cases := []struct {
		in   string
		want []Span
	}{
		{"plain", []Span{{Text: "plain"}}},
		{"**creating failed** error: no", []Span{{Text: "creating failed", Bold: true}, {Text: " error: no"}}},
		{"a ** b", []Span{{Text: "a ** b"}}},
		{"**x** and **y", []Span{{Text: "x", Bold: true}, {Text: " and **y"}}},
	}
	for _, c := range cases {
		if got := spans(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("spans(%q) = %+v, want %+v", c.in, got, c.want)
		}
	}
}

func TestExplain_SaysWhatFailedInWords(t *testing.T) {
	machine := ResourceRow{Name: "machine", Type: "simcloud:index:Machine", Op: "create", Status: "failed",
		Diagnostics: "error: **creating failed** error: simcloud: injected failure on create\n"}
	disk := ResourceRow{Name: "web-boot", Type: "simcloud:index:Disk", Op: "create", Status: "done"}
	cases := []struct {
		name string
		d    Detail
		rows []ResourceRow
		want string
	}{
		{"a resource failed", Detail{Operation: Operation{Kind: KindDeploy, Status: Failed,
			Error: "step up: pulumi up failed (exit 255): … (everything it created was removed)"}}, []ResourceRow{disk, machine},
			"The machine could not be created: injected failure on create; what it had made was removed again."},
		{"a step failed", Detail{Operation: Operation{Kind: KindDeploy, Status: Failed, Error: "step resolve: no free address"},
			Steps: []Step{{Name: StepResolve, Error: "no free address"}}}, nil,
			"Its inputs could not be filled in by the environment's resolvers."},
		{"a list knows the step by the error", Detail{Operation: Operation{Kind: KindUpdate, Status: Failed,
			Error: "step up: boom (rolled back to the previous version and parameters)"}}, nil,
			"The engine could not make the change; the deployment was rolled back to its previous version and parameters."},
		{"cancelled", Detail{Operation: Operation{Kind: KindDeploy, Status: Cancelled,
			Error: "step up: cancelled (everything it created was removed)"}}, nil,
			"This deploy was cancelled; what it had made was removed again."},
		{"refused", Detail{Operation: Operation{Kind: KindDeploy, Status: Failed, Error: "web is deployed already"}}, nil,
			"web is deployed already"},
	}
	for _, c := range cases {
		if got := explain(c.d, c.rows); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
