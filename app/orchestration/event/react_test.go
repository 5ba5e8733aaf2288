package event

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"

	"nimbus/app/kernel/outbox"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbtest"
)

// TestReactions_RunInTheRoutingAndAFailureLeavesTheEventWaiting: a reaction is told of its own
// type of event with what the event was written about, in the routing's transaction; when one
// fails, what the reactions wrote is undone and the event waits for the next sweep, which runs
// them again.
func TestReactions_RunInTheRoutingAndAFailureLeavesTheEventWaiting(t *testing.T) {
	pool := dbtest.Pool(t)
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := rivertest.WorkContext(context.Background(), client)
	d := dbtest.NewDeployment(t, pool)
	for _, e := range []outbox.Event{
		{Type: "deployment.cancelled", Subject: "web", Deployment: d.DeploymentID, Data: map[string]any{"operation": d.OperationID}},
		{Type: "deployment.succeeded", Subject: "db"},
	} {
		if err := outbox.Emit(ctx, db.Queries(pool), e); err != nil {
			t.Fatal(err)
		}
	}

	var told []outbox.Logged
	fail := true
	router := NewRouter(pool, nil, nil).
		Reacting("deployment.cancelled", func(ctx context.Context, tx pgx.Tx, e outbox.Logged) error {
			told = append(told, e)
			return audit.Record(ctx, db.Queries(tx), audit.System, audit.Event{Action: "test.reacted", TargetType: "deployment", TargetID: e.Deployment.String()})
		}).
		Reacting("deployment.cancelled", func(context.Context, pgx.Tx, outbox.Logged) error {
			if fail {
				return errors.New("not now")
			}
			return nil
		})
	sweep := NewSweeper(router)
	reacted := func() (audited int, waiting int) {
		t.Helper()
		err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM audit_events WHERE action = 'test.reacted'),
			(SELECT count(*) FROM event_log WHERE outcome = $1)`, Pending).Scan(&audited, &waiting)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			t.Fatal(err)
		}
		return audited, waiting
	}

	if err := sweep.Work(ctx, nil); err == nil {
		t.Fatal("a sweep whose reaction failed reported no error")
	}
	if audited, waiting := reacted(); audited != 0 || waiting != 1 {
		t.Fatalf("after a failed reaction: %d reactions kept, %d events waiting; want 0 and 1", audited, waiting)
	}

	fail = false
	if err := sweep.Work(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if audited, waiting := reacted(); audited != 1 || waiting != 0 {
		t.Fatalf("after the next sweep: %d reactions kept, %d events waiting; want 1 and 0", audited, waiting)
	}
	if len(told) != 2 || told[1].Deployment != d.DeploymentID || told[1].Subject != "web" {
		t.Fatalf("the reaction was told %+v", told)
	}
	if id, err := told[1].ID("operation"); err != nil || id != d.OperationID {
		t.Fatalf("the event's data gave operation %v (%v)", id, err)
	}
}
