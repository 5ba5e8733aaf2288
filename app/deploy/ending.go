package deploy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"nimbus/app/outbox"
	"nimbus/db/dbgen"
	"nimbus/jobs/saga"
)

// outcome is how a run of an operation's steps came out.
type outcome struct {
	err     error
	changes map[string]int
	exit    *int // the engine's exit code, when it refused
	// refused is an operation that no longer fits the deployment, found before it did
	// anything: it fails and leaves the deployment as it is.
	refused error
}

// ending is how an operation ends: its status, the status its deployment is left with ("" leaves
// it as it is), and the message the operation keeps.
type ending struct {
	status     Status
	deployment DeploymentStatus
	message    string
}

// end decides how an operation of the kind, given limit to run, ends after a run that came to o
// and is not handed back for another attempt. TestEnd lists every case.
func end(kind Kind, o outcome, limit time.Duration) ending {
	var f *saga.Failure
	switch {
	case errors.As(o.err, &f):
		e := ending{status: Failed, message: f.Error()}
		if errors.Is(o.err, saga.ErrTimedOut) {
			e.message = fmt.Sprintf("ran out of its %s: %s", limit, e.message)
		}
		// A cancelled operation whose undo went through failed in nothing: its deployment
		// says it was cancelled. An undo that failed leaves it failed.
		left := Broken
		if errors.Is(o.err, saga.ErrCancelled) {
			e.status, left = Cancelled, Interrupted
		}
		switch {
		case !kind.changes():
			// Nothing changed, so the deployment is as it was.
		case !f.Compensated:
			e.deployment = Broken
		case kind == KindDeploy:
			e.message += " (everything it created was removed)"
			e.deployment = left
		case kind == KindUpdate || kind == KindUpgrade:
			e.message += " (rolled back to the previous version and parameters)"
			e.deployment = Deployed
		default:
			e.deployment = left
		}
		return e
	case o.err != nil:
		// Out of attempts on an error that kept passing: what it did may be half done.
		e := ending{status: Failed, message: fmt.Sprintf("gave up after its last attempt: %v", o.err)}
		if kind.changes() {
			e.deployment = Broken
		}
		return e
	case o.refused != nil:
		return ending{status: Failed, message: o.refused.Error()}
	}
	return ending{status: Succeeded}
}

// tell writes the event an operation's end is news of, beside the end: a change that
// succeeded, failed or took a deployment down. Previews and refreshes change nothing and tell
// nothing.
func tell(ctx context.Context, q *dbgen.Queries, op dbgen.Operation, e ending) error {
	if !Kind(op.Kind).changes() {
		return nil
	}
	var typ string
	switch {
	case e.status == Succeeded && Kind(op.Kind) == KindDestroy:
		typ = "deployment.destroyed"
	case e.status == Succeeded:
		typ = "deployment.succeeded"
	case e.status == Failed:
		typ = "deployment.failed"
	default:
		return nil
	}
	d, err := q.GetDeployment(ctx, op.DeploymentID)
	if err != nil {
		return err
	}
	return outbox.Emit(ctx, q, outbox.Event{Type: typ, Subject: d.Name, Tenant: d.TenantID, Environment: d.EnvironmentID,
		Instance: d.StackInstanceID.UUID, Deployment: d.ID,
		Data: map[string]any{"operation": op.ID, "kind": op.Kind, "status": e.status, "error": e.message, "slot": d.Slot}})
}
