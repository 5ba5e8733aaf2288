package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"nimbus/app/kernel/outbox"
	"nimbus/app/kernel/outcome"
	"nimbus/app/kernel/problem"
	"nimbus/db/dbgen"
	"nimbus/jobs/saga"
)

// ran is what a run of an operation's steps came to.
type ran struct {
	err     error
	changes map[string]int
	exit    *int // the engine's exit code, when it refused
	// refused is an operation that no longer fits the deployment, found before it did
	// anything: it fails and leaves the deployment as it is. A *problem.ValidationError names
	// the field and the rule.
	refused error
}

// ending is how an operation ends: its status, the status its deployment is left with ("" leaves
// it as it is), its outcome, and the message the operation keeps, said from the outcome.
type ending struct {
	status     Status
	deployment DeploymentStatus
	outcome    outcome.Outcome
	message    string
}

// end decides how an operation of the kind, given limit to run, ends after a run that came to r
// and is not handed back for another attempt. TestEnd lists every case.
func end(kind Kind, r ran, limit time.Duration) ending {
	var f *saga.Failure
	var no *Rejection
	switch {
	case errors.As(r.err, &no):
		// Turned down at the gate before it changed anything: it ends as the operations that
		// waited on the decision did (EndWaiting), a first deploy's deployment left broken.
		e := ending{status: Rejected, outcome: outcome.Outcome{Kind: outcome.Rejected}, message: no.Reason}
		if kind == KindDeploy {
			e.deployment = Broken
		}
		return e
	case errors.As(r.err, &f):
		e := ending{status: Failed, outcome: outcome.Outcome{Kind: outcome.Failed, FailedStep: f.Step}}
		// A cancelled operation whose undo went through failed in nothing: its deployment
		// says it was cancelled. An undo that failed leaves it failed.
		left := Broken
		switch {
		case errors.Is(r.err, saga.ErrTimedOut):
			e.outcome.Kind, e.outcome.TimedOutAfter = outcome.TimedOut, limit
		case errors.Is(r.err, saga.ErrCancelled):
			e.status, left = Cancelled, Interrupted
			e.outcome.Kind = outcome.Cancelled
		case problem.Refusal(f.Err):
			e.outcome.Kind, e.outcome.Refusals = outcome.Refused, refusals(f.Err)
		}
		switch {
		case !kind.changes():
			// Nothing changed, so the deployment is as it was.
		case !f.Compensated:
			e.deployment = Broken
		case kind == KindDeploy:
			e.outcome.Undone = true
			e.deployment = left
		case kind == KindUpdate || kind == KindUpgrade:
			e.outcome.RolledBack = true
			e.deployment = Deployed
		default:
			e.deployment = left
		}
		e.message = said(e.outcome, f.Error())
		return e
	case r.err != nil:
		// Out of attempts on an error that kept passing: what it did may be half done.
		e := ending{status: Failed, outcome: outcome.Outcome{Kind: outcome.GaveUp}}
		if kind.changes() {
			e.deployment = Broken
		}
		e.message = said(e.outcome, r.err.Error())
		return e
	case r.refused != nil:
		o := outcome.Outcome{Kind: outcome.Refused, Refusals: refusals(r.refused)}
		return ending{status: Failed, outcome: o, message: said(o, words(r.refused))}
	}
	return ending{status: Succeeded, outcome: outcome.Outcome{Kind: outcome.Succeeded}}
}

// restored is how a restore ends, which runs in its request rather than in the steps of a
// worker: err is why its state could not be put back.
func restored(err error) ending {
	if err != nil {
		return ending{status: Failed, outcome: outcome.Outcome{Kind: outcome.Failed}, message: err.Error()}
	}
	return ending{status: Succeeded, outcome: outcome.Outcome{Kind: outcome.Succeeded}}
}

// said is the message an operation keeps: why it failed (cause, in the words of the step, the
// engine or the rule), with what its outcome adds to that.
func said(o outcome.Outcome, cause string) string {
	msg := cause
	switch o.Kind {
	case outcome.TimedOut:
		msg = fmt.Sprintf("ran out of its %s: %s", o.TimedOutAfter, msg)
	case outcome.GaveUp:
		msg = "gave up after its last attempt: " + msg
	}
	switch {
	case o.Undone:
		msg += " (everything it created was removed)"
	case o.RolledBack:
		msg += " (rolled back to the previous version and parameters)"
	}
	return msg
}

// refusals are the fields a refusal names, each with the rule it broke; none for a refusal
// that names no field (a denial).
func refusals(err error) []outcome.Refusal {
	var v *problem.ValidationError
	if !errors.As(err, &v) {
		return nil
	}
	out := make([]outcome.Refusal, len(v.Fields))
	for i, f := range v.Fields {
		out[i] = outcome.Refusal{Field: f.Field, Rule: f.Rule}
	}
	return out
}

// words is what a refusal says, each field's message in turn.
func words(err error) string {
	var v *problem.ValidationError
	if !errors.As(err, &v) || len(v.Fields) == 0 {
		return err.Error()
	}
	msgs := make([]string, len(v.Fields))
	for i, f := range v.Fields {
		msgs[i] = f.Message
	}
	return strings.Join(msgs, "; ")
}

// recordOutcome puts an ending's outcome into the statement that finishes the operation.
func recordOutcome(p *dbgen.FinishOperationParams, o outcome.Outcome) {
	p.Outcome, p.FailedStep, p.Undone, p.RolledBack = string(o.Kind), o.FailedStep, o.Undone, o.RolledBack
	if o.TimedOutAfter > 0 {
		p.TimedOutAfter = pgtype.Interval{Microseconds: o.TimedOutAfter.Microseconds(), Valid: true}
	}
	refused := o.Refusals
	if refused == nil {
		refused = []outcome.Refusal{}
	}
	p.Refusals, _ = json.Marshal(refused)
}

// outcomeOf reads back the outcome an operation's row recorded.
func outcomeOf(r dbgen.ListOperationsRow) outcome.Outcome {
	o := outcome.Outcome{Kind: outcome.Kind(r.Outcome), FailedStep: r.FailedStep, Undone: r.Undone, RolledBack: r.RolledBack}
	if r.TimedOutAfter.Valid {
		// Written from a duration, so it holds no days or months.
		o.TimedOutAfter = time.Duration(r.TimedOutAfter.Microseconds) * time.Microsecond
	}
	_ = json.Unmarshal(r.Refusals, &o.Refusals)
	return o
}

// told is the event an operation's end is news of: a change that succeeded, failed, was
// cancelled or took a deployment down. Previews and refreshes change nothing and tell nothing.
func told(op dbgen.Operation, status Status) string {
	if !Kind(op.Kind).changes() {
		return ""
	}
	switch {
	case status == Succeeded && Kind(op.Kind) == KindDestroy:
		return "deployment.destroyed"
	case status == Succeeded:
		return "deployment.succeeded"
	case status == Failed:
		return "deployment.failed"
	case status == Cancelled:
		return "deployment.cancelled"
	}
	return ""
}

// tell writes the event an operation's end is news of, beside the end.
func tell(ctx context.Context, q *dbgen.Queries, op dbgen.Operation, status Status, message string) error {
	typ := told(op, status)
	if typ == "" {
		return nil
	}
	d, err := q.GetDeployment(ctx, op.DeploymentID)
	if err != nil {
		return err
	}
	return outbox.Emit(ctx, q, outbox.Event{Type: typ, Subject: d.Name, Tenant: d.TenantID, Environment: d.EnvironmentID,
		Instance: d.StackInstanceID.UUID, Deployment: d.ID,
		Data: map[string]any{"operation": op.ID, "kind": op.Kind, "status": status, "error": message, "slot": d.Slot}})
}
