package event

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"nimbus/db/dbtest"
)

// routes is a Queue that keeps the routing it is asked to queue.
type routes []uuid.UUID

func (r *routes) InsertManyTx(_ context.Context, _ pgx.Tx, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error) {
	for _, p := range params {
		*r = append(*r, p.Args.(RouteArgs).Event)
	}
	return nil, nil
}

// TestRecord_ABatchIsWrittenOnceEach records a batch holding an event twice and one logged
// before: each new event is written once and routed once, the others counted as duplicates.
func TestRecord_ABatchIsWrittenOnceEach(t *testing.T) {
	pool := dbtest.Pool(t)
	ctx := context.Background()
	var src Source
	err := pool.QueryRow(ctx, `WITH z AS (INSERT INTO landing_zones (name, provider) SELECT 'zone', name FROM semantic_providers LIMIT 1 RETURNING id)
		INSERT INTO event_sources (landing_zone_id, name, kind) SELECT id, 'poller', 'cloud_provider' FROM z
		RETURNING id, landing_zone_id, kind`).Scan(&src.ID, &src.LandingZoneID, &src.Kind)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 27, 1, 2, 3, 456789999, time.UTC)
	record := func(events ...Event) (Accepted, routes) {
		t.Helper()
		var queued routes
		var out Accepted
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			var err error
			out, err = Record(ctx, tx, &queued, src, events)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out, queued
	}
	first, _ := record(Event{ID: "b", Type: "vm.stopped", Subject: "vm-2"})
	out, queued := record(Event{ID: "c", Type: "vm.started", Subject: "vm-3", Time: &at, Data: map[string]any{"why": "hand"}},
		Event{ID: "b", Type: "vm.stopped", Subject: "vm-2"}, Event{ID: "a", Type: "vm.deleted", Subject: "vm-1"},
		Event{ID: "c", Type: "vm.started", Subject: "vm-3", Time: &at})
	if out.Accepted != 2 || out.Duplicates != 2 || len(out.IDs) != 2 || !slices.Equal(queued, routes(out.IDs)) {
		t.Fatalf("accepted %+v, routed %v; want a and c accepted and routed, b and the second c duplicates", out, queued)
	}
	var ids []string
	var occurred *time.Time
	err = pool.QueryRow(ctx, `SELECT array_agg(event_id ORDER BY event_id), max(occurred_at) FROM event_log WHERE source_id = $1`, src.ID).
		Scan(&ids, &occurred)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, []string{"a", "b", "c"}) || occurred == nil || !occurred.Equal(at.Truncate(time.Microsecond)) || first.Accepted != 1 {
		t.Fatalf("the log holds %v, c occurred at %v; want a, b and c once each, c at %v", ids, occurred, at.Truncate(time.Microsecond))
	}
	var a uuid.UUID
	if err := pool.QueryRow(ctx, `SELECT id FROM event_log WHERE event_id = 'a'`).Scan(&a); err != nil || out.IDs[0] != a {
		t.Fatalf("the IDs %v do not start with a's %s (%v): they follow the events' own ids", out.IDs, a, err)
	}
}
