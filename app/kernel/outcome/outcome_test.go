package outcome_test

import (
	"encoding/json"
	"testing"
	"time"

	"nimbus/app/kernel/outcome"
)

func TestOutcome_JSONSaysWhatAppliesOnly(t *testing.T) {
	cases := []struct {
		o    outcome.Outcome
		want string
	}{
		{outcome.Outcome{Kind: outcome.Succeeded}, `{"kind":"succeeded"}`},
		{outcome.Outcome{Kind: outcome.TimedOut, FailedStep: "up", Undone: true, TimedOutAfter: 30 * time.Minute},
			`{"kind":"timed_out","failed_step":"up","undone":true,"timed_out_after":"30m0s"}`},
		{outcome.Outcome{Kind: outcome.Refused, FailedStep: "govern", Refusals: []outcome.Refusal{{Field: "parameters.cores", Rule: "maximum"}}},
			`{"kind":"refused","failed_step":"govern","refusals":[{"field":"parameters.cores","rule":"maximum"}]}`},
	}
	for _, c := range cases {
		got, err := json.Marshal(c.o)
		if err != nil || string(got) != c.want {
			t.Errorf("%+v: %s, %v; want %s", c.o, got, err, c.want)
		}
	}
}
