package deploy

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"nimbus/jobs/saga"
)

// Every way a run can come out, for every kind of operation a worker runs.
func TestEnd(t *testing.T) {
	refusal := errors.New("provider refused")
	undone := func(err error) error { return &saga.Failure{Step: "up", Err: err, Compensated: true} }
	halfDone := &saga.Failure{Step: "up", Err: refusal, Compensated: false}
	cancelled := undone(fmt.Errorf("%w", saga.ErrCancelled))
	timedOut := undone(fmt.Errorf("%w", saga.ErrTimedOut))
	passing := saga.Transient(errors.New("database went away"))
	outcomes := []struct {
		name string
		o    outcome
	}{
		{"succeeded", outcome{}},
		{"failed, undone", outcome{err: undone(refusal)}},
		{"failed, undo failed", outcome{err: halfDone}},
		{"cancelled", outcome{err: cancelled}},
		{"timed out", outcome{err: timedOut}},
		{"out of attempts", outcome{err: passing}},
		{"refused", outcome{refused: errors.New("vm is deployed already")}},
	}
	// want[kind][outcome] is the operation's status, the deployment's (keep leaves it) and the
	// message.
	type row struct {
		status     Status
		deployment DeploymentStatus
		message    string
	}
	const keep = DeploymentStatus("")
	undoneMsg := undone(refusal).Error()
	halfMsg := halfDone.Error()
	cancelMsg := cancelled.Error()
	timeMsg := "ran out of its 30m0s: " + timedOut.Error()
	gaveUp := "gave up after its last attempt: database went away"
	refusedMsg := "vm is deployed already"
	// A preview, a refresh and a drift check change nothing, however they end.
	unchanged := []row{{Succeeded, keep, ""}, {Failed, keep, undoneMsg}, {Failed, keep, halfMsg}, {Cancelled, keep, cancelMsg},
		{Failed, keep, timeMsg}, {Failed, keep, gaveUp}, {Failed, keep, refusedMsg}}
	want := map[Kind][]row{
		KindPreview:    unchanged,
		KindRefresh:    unchanged,
		KindDriftCheck: unchanged,
		KindDeploy: {{Succeeded, keep, ""},
			{Failed, Broken, undoneMsg + " (everything it created was removed)"},
			{Failed, Broken, halfMsg},
			{Cancelled, Interrupted, cancelMsg + " (everything it created was removed)"},
			{Failed, Broken, timeMsg + " (everything it created was removed)"},
			{Failed, Broken, gaveUp},
			{Failed, keep, refusedMsg}},
		KindUpdate: {{Succeeded, keep, ""},
			{Failed, Deployed, undoneMsg + " (rolled back to the previous version and parameters)"},
			{Failed, Broken, halfMsg},
			{Cancelled, Deployed, cancelMsg + " (rolled back to the previous version and parameters)"},
			{Failed, Deployed, timeMsg + " (rolled back to the previous version and parameters)"},
			{Failed, Broken, gaveUp},
			{Failed, keep, refusedMsg}},
		KindDestroy: {{Succeeded, keep, ""},
			{Failed, Broken, undoneMsg},
			{Failed, Broken, halfMsg},
			{Cancelled, Interrupted, cancelMsg},
			{Failed, Broken, timeMsg},
			{Failed, Broken, gaveUp},
			{Failed, keep, refusedMsg}},
	}
	want[KindUpgrade] = want[KindUpdate]
	want[KindRestore] = want[KindDestroy]
	for kind, rows := range want {
		for i, o := range outcomes {
			got := end(kind, o.o, 30*time.Minute)
			w := rows[i]
			if got.status != w.status || got.deployment != w.deployment || got.message != w.message {
				t.Errorf("%s %s: got (%s, %q, %q), want (%s, %q, %q)", kind, o.name,
					got.status, got.deployment, got.message, w.status, w.deployment, w.message)
			}
		}
	}
}
