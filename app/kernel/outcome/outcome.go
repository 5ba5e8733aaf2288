// Package outcome says how an operation came out, as fields: why it ended as it did, the step
// that failed, whether its undo removed what it had made or rolled its deployment back, the time
// that ran out, and for a refusal each field it named with the rule that field broke. The worker
// fills an Outcome when an operation ends and records it beside the operation's message; what
// the pages and the API say about the ending is read from the Outcome, never from the message.
package outcome

import (
	"encoding/json"
	"time"
)

// Kind is why an operation ended as it did.
type Kind string

// The kinds of outcome; the zero Kind is an operation that has not ended.
const (
	Succeeded Kind = "succeeded" // every step was done
	Failed    Kind = "failed"    // a step failed for good
	TimedOut  Kind = "timed_out" // it ran out of the time an operation may run
	Cancelled Kind = "cancelled" // someone cancelled it
	GaveUp    Kind = "gave_up"   // an error that should have passed came back until its last attempt
	Refused   Kind = "refused"   // a rule said no, or it no longer fitted its deployment
	Rejected  Kind = "rejected"  // its approvers turned it down
)

// Refusal is one field a refusal named and the rule that field broke, such as
// parameters.cores and maximum.
type Refusal struct {
	Field string `json:"field"`
	Rule  string `json:"rule"`
}

// Outcome is how an operation came out.
type Outcome struct {
	Kind Kind
	// FailedStep is the step that failed, or that a cancel or the time limit stopped; "" when
	// it ended outside its steps (a refusal before it began, the last attempt given up).
	FailedStep string
	// Undone: the undo of a deploy removed everything it had created.
	Undone bool
	// RolledBack: the undo of an update or an upgrade put the previous version and parameters
	// back.
	RolledBack bool
	// TimedOutAfter is the time the operation might run, which ran out; 0 unless it timed out.
	TimedOutAfter time.Duration
	// Refusals are what a refusal named, when it named fields.
	Refusals []Refusal
}

// Ended reports whether the operation has ended, so that there is an outcome to tell.
func (o Outcome) Ended() bool { return o.Kind != "" }

// MarshalJSON writes the outcome as the API shows it: {"kind", "failed_step", "undone",
// "rolled_back", "timed_out_after" (as "30m0s"), "refusals": [{"field", "rule"}]}, leaving out
// what does not apply.
func (o Outcome) MarshalJSON() ([]byte, error) {
	out := struct {
		Kind          Kind      `json:"kind"`
		FailedStep    string    `json:"failed_step,omitempty"`
		Undone        bool      `json:"undone,omitempty"`
		RolledBack    bool      `json:"rolled_back,omitempty"`
		TimedOutAfter string    `json:"timed_out_after,omitempty"`
		Refusals      []Refusal `json:"refusals,omitempty"`
	}{Kind: o.Kind, FailedStep: o.FailedStep, Undone: o.Undone, RolledBack: o.RolledBack, Refusals: o.Refusals}
	if o.TimedOutAfter > 0 {
		out.TimedOutAfter = o.TimedOutAfter.String()
	}
	return json.Marshal(out)
}
