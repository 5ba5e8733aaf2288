package deployweb

import (
	"reflect"
	"testing"
	"time"

	"nimbus/app/kernel/outcome"
	"nimbus/app/orchestration/deploy"
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
		d    deploy.Detail
		rows []ResourceRow
		want string
	}{
		{"a resource failed", deploy.Detail{Operation: deploy.Operation{Kind: deploy.KindDeploy, Status: deploy.Failed,
			Error:   "step up: pulumi up failed (exit 255): … (everything it created was removed)",
			Outcome: outcome.Outcome{Kind: outcome.Failed, FailedStep: deploy.StepUp, Undone: true}}}, []ResourceRow{disk, machine},
			"The machine could not be created: injected failure on create; what it had made was removed again."},
		{"a step failed", deploy.Detail{Operation: deploy.Operation{Kind: deploy.KindDeploy, Status: deploy.Failed, Error: "step resolve: no free address",
			Outcome: outcome.Outcome{Kind: outcome.Failed, FailedStep: deploy.StepResolve}},
			Steps: []deploy.Step{{Name: deploy.StepResolve, Error: "no free address"}}}, nil,
			"Its inputs could not be filled in by the environment's resolvers."},
		{"a list knows the step by the outcome", deploy.Detail{Operation: deploy.Operation{Kind: deploy.KindUpdate, Status: deploy.Failed,
			Error:   "step up: boom (rolled back to the previous version and parameters)",
			Outcome: outcome.Outcome{Kind: outcome.Failed, FailedStep: deploy.StepUp, RolledBack: true}}}, nil,
			"The engine could not make the change; the deployment was rolled back to its previous version and parameters."},
		{"cancelled", deploy.Detail{Operation: deploy.Operation{Kind: deploy.KindDeploy, Status: deploy.Cancelled,
			Error:   "step up: cancelled (everything it created was removed)",
			Outcome: outcome.Outcome{Kind: outcome.Cancelled, FailedStep: deploy.StepUp, Undone: true}}}, nil,
			"This deploy was cancelled; what it had made was removed again."},
		{"timed out", deploy.Detail{Operation: deploy.Operation{Kind: deploy.KindDeploy, Status: deploy.Failed,
			Error:   "ran out of its 6s: step up: context deadline exceeded (everything it created was removed)",
			Outcome: outcome.Outcome{Kind: outcome.TimedOut, FailedStep: deploy.StepUp, Undone: true, TimedOutAfter: 6 * time.Second}}}, nil,
			"It took longer than the 6s an operation may run; what it had made was removed again."},
		{"refused by a rule", deploy.Detail{Operation: deploy.Operation{Kind: deploy.KindDeploy, Status: deploy.Failed,
			Error: "step govern: invalid input: parameters.cores: 8 is above the maximum of 4",
			Outcome: outcome.Outcome{Kind: outcome.Refused, FailedStep: deploy.StepGovern,
				Refusals: []outcome.Refusal{{Field: "parameters.cores", Rule: "maximum"}}}}}, nil,
			"The tenant's rules do not allow it."},
		{"refused", deploy.Detail{Operation: deploy.Operation{Kind: deploy.KindDeploy, Status: deploy.Failed, Error: "web is deployed already",
			Outcome: outcome.Outcome{Kind: outcome.Refused, Refusals: []outcome.Refusal{{Field: "deployment", Rule: "state"}}}}}, nil,
			"web is deployed already"},
		{"rejected", deploy.Detail{Operation: deploy.Operation{Kind: deploy.KindUpdate, Status: deploy.Rejected, Error: "not on a Friday",
			Outcome: outcome.Outcome{Kind: outcome.Rejected}}}, nil,
			"This update was rejected: not on a Friday"},
		{"running", deploy.Detail{Operation: deploy.Operation{Kind: deploy.KindDeploy, Status: deploy.Running}}, nil, ""},
	}
	for _, c := range cases {
		if got := explain(c.d, c.rows); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// What explain says of an ending comes from its outcome: a message in other words, or in the
// words that used to carry the outcome, changes nothing where the outcome speaks. An operation's
// page and its row in a deployment's history say the same. That the outcome reads back from the
// database as it was recorded, whatever the message, is deploy's
// TestEnding_TheOutcomeReadsBackAsRecorded.
func TestExplain_ReadsTheOutcomeNotTheMessage(t *testing.T) {
	late := outcome.Outcome{Kind: outcome.TimedOut, FailedStep: deploy.StepUp, Undone: true, TimedOutAfter: 6 * time.Second}
	for _, msg := range []string{
		"",
		"ran out of its 6s: step up: context deadline exceeded (everything it created was removed)",
		"something else entirely",
		"ran out of its 9h: step resolve: x (rolled back to the previous version and parameters)",
		"step resolve: boom (rolled back to the previous version and parameters)",
	} {
		d := deploy.Detail{Operation: deploy.Operation{Kind: deploy.KindDeploy, Status: deploy.Failed, Error: msg, Outcome: late}}
		want := "It took longer than the 6s an operation may run; what it had made was removed again."
		if got := explain(d, nil); got != want {
			t.Errorf("message %q: the page says %q, want %q", msg, got, want)
		}
		if got := operationRow(d.Operation).Summary; got != want {
			t.Errorf("message %q: the history says %q, want %q", msg, got, want)
		}
	}
	// And a message saying it was undone, of an operation whose outcome says it was not.
	d := deploy.Detail{Operation: deploy.Operation{Kind: deploy.KindUpdate, Status: deploy.Failed, Error: "step up: boom (rolled back to the previous version and parameters)",
		Outcome: outcome.Outcome{Kind: outcome.Failed, FailedStep: deploy.StepUp}}}
	if got, want := explain(d, nil), "The engine could not make the change."; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
