package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/outcome"
	"nimbus/app/kernel/problem"
	"nimbus/db"
	"nimbus/db/dbtest"
	"nimbus/jobs/saga"
)

// Every way a run can come out, for every kind of operation a worker runs: the operation's
// status, its deployment's, its outcome, and the message said from the outcome.
func TestEnd(t *testing.T) {
	refusal := errors.New("provider refused")
	undone := func(err error) error { return &saga.Failure{Step: "up", Err: err, Compensated: true} }
	halfDone := &saga.Failure{Step: "up", Err: refusal, Compensated: false}
	cancelled := undone(fmt.Errorf("%w", saga.ErrCancelled))
	timedOut := undone(fmt.Errorf("%w", saga.ErrTimedOut))
	governed := &saga.Failure{Step: "govern", Err: problem.Invalid("parameters.cores", "maximum", "8 is above the maximum of 4"), Compensated: true}
	passing := saga.Transient(errors.New("database went away"))
	runs := []struct {
		name string
		r    ran
	}{
		{"succeeded", ran{}},
		{"failed, undone", ran{err: undone(refusal)}},
		{"failed, undo failed", ran{err: halfDone}},
		{"cancelled", ran{err: cancelled}},
		{"timed out", ran{err: timedOut}},
		{"out of attempts", ran{err: passing}},
		{"refused", ran{refused: problem.Invalid("deployment", "state", "vm is deployed already")}},
		{"refused by governance", ran{err: governed}},
		{"rejected before it got to the gate", ran{err: &saga.Failure{Step: StepApprove, Err: &Rejection{Reason: "rejected by x: no"}, Compensated: true}}},
	}
	// want[kind][run] is the operation's status, the deployment's (keep leaves it), the
	// outcome and the message.
	type row struct {
		status     Status
		deployment DeploymentStatus
		outcome    outcome.Outcome
		message    string
	}
	const keep = DeploymentStatus("")
	const removed, rolledBack = " (everything it created was removed)", " (rolled back to the previous version and parameters)"
	undoneMsg := undone(refusal).Error()
	halfMsg := halfDone.Error()
	cancelMsg := cancelled.Error()
	timeMsg := "ran out of its 30m0s: " + timedOut.Error()
	gaveUp := "gave up after its last attempt: database went away"
	refusedMsg := "vm is deployed already"
	governMsg := governed.Error()
	succeeded := outcome.Outcome{Kind: outcome.Succeeded}
	failed := outcome.Outcome{Kind: outcome.Failed, FailedStep: "up"}
	stopped := outcome.Outcome{Kind: outcome.Cancelled, FailedStep: "up"}
	late := outcome.Outcome{Kind: outcome.TimedOut, FailedStep: "up", TimedOutAfter: 30 * time.Minute}
	tried := outcome.Outcome{Kind: outcome.GaveUp}
	refused := outcome.Outcome{Kind: outcome.Refused, Refusals: []outcome.Refusal{{Field: "deployment", Rule: "state"}}}
	ruled := outcome.Outcome{Kind: outcome.Refused, FailedStep: "govern", Refusals: []outcome.Refusal{{Field: "parameters.cores", Rule: "maximum"}}}
	turned := outcome.Outcome{Kind: outcome.Rejected}
	with := func(o outcome.Outcome, undone, rolledBack bool) outcome.Outcome {
		o.Undone, o.RolledBack = undone, rolledBack
		return o
	}
	// A preview, a refresh and a drift check change nothing, however they end.
	unchanged := []row{{Succeeded, keep, succeeded, ""}, {Failed, keep, failed, undoneMsg}, {Failed, keep, failed, halfMsg},
		{Cancelled, keep, stopped, cancelMsg}, {Failed, keep, late, timeMsg}, {Failed, keep, tried, gaveUp},
		{Failed, keep, refused, refusedMsg}, {Failed, keep, ruled, governMsg}, {Rejected, keep, turned, "rejected by x: no"}}
	want := map[Kind][]row{
		KindPreview:    unchanged,
		KindRefresh:    unchanged,
		KindDriftCheck: unchanged,
		KindDeploy: {{Succeeded, keep, succeeded, ""},
			{Failed, Broken, with(failed, true, false), undoneMsg + removed},
			{Failed, Broken, failed, halfMsg},
			{Cancelled, Interrupted, with(stopped, true, false), cancelMsg + removed},
			{Failed, Broken, with(late, true, false), timeMsg + removed},
			{Failed, Broken, tried, gaveUp},
			{Failed, keep, refused, refusedMsg},
			{Failed, Broken, with(ruled, true, false), governMsg + removed},
			{Rejected, Broken, turned, "rejected by x: no"}},
		KindUpdate: {{Succeeded, keep, succeeded, ""},
			{Failed, Deployed, with(failed, false, true), undoneMsg + rolledBack},
			{Failed, Broken, failed, halfMsg},
			{Cancelled, Deployed, with(stopped, false, true), cancelMsg + rolledBack},
			{Failed, Deployed, with(late, false, true), timeMsg + rolledBack},
			{Failed, Broken, tried, gaveUp},
			{Failed, keep, refused, refusedMsg},
			{Failed, Deployed, with(ruled, false, true), governMsg + rolledBack},
			{Rejected, keep, turned, "rejected by x: no"}},
		KindDestroy: {{Succeeded, keep, succeeded, ""},
			{Failed, Broken, failed, undoneMsg},
			{Failed, Broken, failed, halfMsg},
			{Cancelled, Interrupted, stopped, cancelMsg},
			{Failed, Broken, late, timeMsg},
			{Failed, Broken, tried, gaveUp},
			{Failed, keep, refused, refusedMsg},
			{Failed, Broken, ruled, governMsg},
			{Rejected, keep, turned, "rejected by x: no"}},
	}
	want[KindUpgrade] = want[KindUpdate]
	want[KindRestore] = want[KindDestroy]
	for kind, rows := range want {
		for i, r := range runs {
			got := end(kind, r.r, 30*time.Minute)
			w := rows[i]
			if got.status != w.status || got.deployment != w.deployment || got.message != w.message || !reflect.DeepEqual(got.outcome, w.outcome) {
				t.Errorf("%s %s: got (%s, %q, %+v, %q), want (%s, %q, %+v, %q)", kind, r.name,
					got.status, got.deployment, got.outcome, got.message, w.status, w.deployment, w.outcome, w.message)
			}
		}
	}
}

// An operation's ending reads back from its row as it was recorded, whatever its message says:
// a deploy that ran out of time and was undone says both. The pages word it from these fields
// alone (deployweb's TestExplain_ReadsTheOutcomeNotTheMessage); the API shows the outcome as it
// was recorded.
func TestEnding_TheOutcomeReadsBackAsRecorded(t *testing.T) {
	ctx := context.Background()
	pool := dbtest.Pool(t)
	q := db.Queries(pool)
	id, lease := anOperation(t, pool), uuid.New()
	if _, err := claim(ctx, q, id, lease); err != nil {
		t.Fatal(err)
	}
	timedOut := &saga.Failure{Step: StepUp, Err: fmt.Errorf("pulumi up: %w", saga.ErrTimedOut), Compensated: true}
	if err := finish(ctx, q, id, lease, end(KindDeploy, ran{err: timedOut}, 6*time.Second), map[string]int{}, nil); err != nil {
		t.Fatal(err)
	}
	svc := NewService(pool, nil, nil, nil, nil)
	admin := access.Principal{ProviderAdmin: true}
	want := outcome.Outcome{Kind: outcome.TimedOut, FailedStep: StepUp, Undone: true, TimedOutAfter: 6 * time.Second}
	for _, msg := range []string{"", "the engine said something else entirely", "step resolve: boom (rolled back to the previous version and parameters)"} {
		if msg != "" {
			if _, err := pool.Exec(ctx, `UPDATE operations SET error = $2 WHERE id = $1`, id, msg); err != nil {
				t.Fatal(err)
			}
		}
		d, err := svc.Detail(ctx, admin, id)
		if err != nil {
			t.Fatal(err)
		}
		o := d.Outcome
		if d.Kind != KindDeploy || d.Status != Failed || o.Kind != want.Kind || o.FailedStep != want.FailedStep || o.Undone != want.Undone ||
			o.RolledBack || o.TimedOutAfter != want.TimedOutAfter || len(o.Refusals) > 0 {
			t.Errorf("message %q: a %s %s, outcome %+v, want a deploy failed, outcome %+v", msg, d.Kind, d.Status, d.Outcome, want)
		}
	}
	d, err := svc.Detail(ctx, admin, id)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(d.Operation)
	if !strings.Contains(string(raw), `"outcome":{"kind":"timed_out","failed_step":"up","undone":true,"timed_out_after":"6s"}`) {
		t.Fatalf("the API shows %s", raw)
	}
}
