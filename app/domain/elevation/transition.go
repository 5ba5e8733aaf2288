package elevation

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/outbox"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/jobs"
)

// Status is where an elevation stands.
type Status string

// The statuses of an elevation.
const (
	Active Status = "active"
	Ended  Status = "ended"
)

// Why is why an elevation ended.
type Why string

// The reasons an elevation ends.
const (
	Expired Why = "expired"
	Revoked Why = "revoked"
)

// Machine is an elevation's life: granted active, it ends once, by itself at its end time or
// when a provider admin revokes it. This file alone records elevations and ends them.
var Machine = lifecycle.Machine[Status]{
	Name: "elevation", Table: "elevations", Column: "status", Writer: "app/domain/elevation/transition.go", Start: Active,
	Moves: map[Status][]Status{Active: {Ended}},
}

// grant records an elevation, queues the job that ends it at its end time, and audits and
// tells of it, all in tx.
func grant(ctx context.Context, tx pgx.Tx, queue jobs.Queue, actor access.Principal, in dbgen.CreateElevationParams, email string) (dbgen.Elevation, error) {
	q := db.Queries(tx)
	in.Status = string(Machine.Start)
	row, err := q.CreateElevation(ctx, in)
	if err != nil {
		return dbgen.Elevation{}, fmt.Errorf("record elevation: %w", err)
	}
	if _, err := queue.InsertTx(ctx, tx, EndArgs{ElevationID: row.ID}, &river.InsertOpts{ScheduledAt: row.EndsAt}); err != nil {
		return dbgen.Elevation{}, fmt.Errorf("schedule the end of elevation %s: %w", row.ID, err)
	}
	diff := map[string]any{"elevation_id": row.ID, "user_id": row.UserID, "email": email, "tenant_id": row.TenantID, "role": row.Role,
		"reason": row.Reason, "ends_at": row.EndsAt.UTC()}
	err = audit.Record(ctx, q, actor, audit.Event{Tenant: row.TenantID, Action: "elevation.grant", TargetType: "user",
		TargetID: row.UserID.String(), Diff: diff})
	if err != nil {
		return dbgen.Elevation{}, err
	}
	return row, outbox.Emit(ctx, q, outbox.Event{Type: "elevation.granted", Subject: email, Tenant: row.TenantID, Data: news(row)})
}

// end ends the elevation e, locked by the caller, for why, in q's transaction: audited as
// actor (the system, for an expiry) and told of.
func end(ctx context.Context, q *dbgen.Queries, actor access.Principal, e dbgen.Elevation, why Why, email string) (dbgen.Elevation, error) {
	if err := Machine.Check("the elevation of "+email, Status(e.Status), Ended); err != nil {
		return dbgen.Elevation{}, err
	}
	row, err := q.EndElevation(ctx, dbgen.EndElevationParams{ID: e.ID, Status: string(Ended), Why: new(string(why)),
		EndedBy: uuid.NullUUID{UUID: actor.UserID, Valid: actor.UserID != uuid.Nil}, Sources: Machine.SourceNames(Ended)})
	if err != nil {
		return dbgen.Elevation{}, fmt.Errorf("end elevation %s: %w", e.ID, err)
	}
	err = audit.Record(ctx, q, actor, audit.Event{Tenant: row.TenantID, Action: "elevation.end", TargetType: "user",
		TargetID: row.UserID.String(), Diff: map[string]any{"elevation_id": row.ID, "user_id": row.UserID, "email": email,
			"tenant_id": row.TenantID, "role": row.Role, "reason": row.Reason, "why": string(why), "ends_at": row.EndsAt.UTC()}})
	if err != nil {
		return dbgen.Elevation{}, err
	}
	data := news(row)
	data["why"] = string(why)
	return row, outbox.Emit(ctx, q, outbox.Event{Type: "elevation.ended", Subject: email, Tenant: row.TenantID, Data: data})
}

// news is what the events of an elevation carry: whose, where, which role, until when.
func news(e dbgen.Elevation) map[string]any {
	return map[string]any{"elevation_id": e.ID.String(), "user_id": e.UserID.String(), "tenant_id": e.TenantID.String(),
		"role": e.Role, "ends_at": e.EndsAt.UTC().Format(time.RFC3339)}
}
