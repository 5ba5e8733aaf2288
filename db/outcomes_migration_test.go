package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"nimbus/db/dbtest"
	"nimbus/migrations"
)

// Operations that ended before their outcomes were fields said it all in their message: the
// migration that adds the fields reads those messages once, so that nothing reads them again.
func TestMigration_OutcomesOfOldOperationsComeFromTheirMessages(t *testing.T) {
	ctx := context.Background()
	pool := dbtest.Pool(t)
	d := dbtest.NewDeployment(t, pool)
	// The database as it was before the migration, holding operations as the worker ended them.
	if _, err := pool.Exec(ctx, `ALTER TABLE operations DROP COLUMN outcome, DROP COLUMN failed_step, DROP COLUMN undone,
		DROP COLUMN rolled_back, DROP COLUMN timed_out_after, DROP COLUMN refusals`); err != nil {
		t.Fatal(err)
	}
	type want struct {
		outcome, step      string
		undone, rolledBack bool
		timedOutAfter      time.Duration
	}
	cases := []struct {
		kind, status, error string
		want                want
	}{
		{"deploy", "succeeded", "", want{outcome: "succeeded"}},
		{"deploy", "failed", "step up: pulumi up failed (exit 255): boom (everything it created was removed)",
			want{outcome: "failed", step: "up", undone: true}},
		{"update", "failed", "step up: boom (rolled back to the previous version and parameters)",
			want{outcome: "failed", step: "up", rolledBack: true}},
		{"deploy", "failed", "step up: boom (and 1 undo steps failed: no)", want{outcome: "failed", step: "up"}},
		{"deploy", "failed", "ran out of its 6s: step up: pulumi up: context deadline exceeded (everything it created was removed)",
			want{outcome: "timed_out", step: "up", undone: true, timedOutAfter: 6 * time.Second}},
		{"update", "failed", "ran out of its 1h30m0s: step preview: slow (rolled back to the previous version and parameters)",
			want{outcome: "timed_out", step: "preview", rolledBack: true, timedOutAfter: 90 * time.Minute}},
		{"refresh", "failed", "ran out of its 1m30.5s: step refresh: slow", want{outcome: "timed_out", step: "refresh", timedOutAfter: 90500 * time.Millisecond}},
		{"refresh", "failed", "ran out of its 500ms: step refresh: slow", want{outcome: "timed_out", step: "refresh", timedOutAfter: 500 * time.Millisecond}},
		// A limit no Postgres interval spells stays in the message; the step still counts.
		{"refresh", "failed", "ran out of its 3µs: step refresh: slow", want{outcome: "failed", step: "refresh"}},
		{"deploy", "cancelled", "step up: cancelled by request (everything it created was removed)",
			want{outcome: "cancelled", step: "up", undone: true}},
		{"deploy", "cancelled", "cancelled before it started", want{outcome: "cancelled"}},
		{"deploy", "rejected", "not today", want{outcome: "rejected"}},
		{"deploy", "failed", "gave up after its last attempt: database went away", want{outcome: "gave_up"}},
		{"deploy", "failed", "step govern: invalid input: parameters.cores: 8 is above the maximum of 4 set by the provider",
			want{outcome: "refused", step: "govern"}},
		{"deploy", "failed", "web is deployed already: change it with an update or an upgrade", want{outcome: "refused"}},
		{"restore", "failed", "the state is not an export of a stack", want{outcome: "failed"}},
	}
	ids := make([]string, len(cases))
	for i, c := range cases {
		if err := pool.QueryRow(ctx, `INSERT INTO operations (deployment_id, kind, status, error, finished_at)
			VALUES ($1, $2, $3, $4, now()) RETURNING id::text`, d.DeploymentID, c.kind, c.status, c.error).Scan(&ids[i]); err != nil {
			t.Fatal(err)
		}
	}
	text, err := migrations.FS.ReadFile("0030_operation_outcomes.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, string(text)); err != nil {
		t.Fatalf("migration: %v", err)
	}
	for i, c := range cases {
		var got want
		var limit pgtype.Interval
		if err := pool.QueryRow(ctx, `SELECT outcome, failed_step, undone, rolled_back, timed_out_after FROM operations WHERE id = $1`,
			ids[i]).Scan(&got.outcome, &got.step, &got.undone, &got.rolledBack, &limit); err != nil {
			t.Fatal(err)
		}
		if limit.Valid {
			got.timedOutAfter = time.Duration(limit.Microseconds) * time.Microsecond
		}
		if got != c.want {
			t.Errorf("%s %s %q: got %+v, want %+v", c.kind, c.status, c.error, got, c.want)
		}
	}
	// The one still queued has not ended, and says nothing.
	var outcome string
	if err := pool.QueryRow(ctx, `SELECT outcome FROM operations WHERE id = $1`, d.OperationID).Scan(&outcome); err != nil || outcome != "" {
		t.Fatalf("a queued operation's outcome: %q, %v", outcome, err)
	}
}
