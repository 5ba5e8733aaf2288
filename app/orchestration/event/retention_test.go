package event

import (
	"context"
	"testing"
	"time"

	"nimbus/db/dbtest"
)

// TestRetention_OldEventsGoWithTheirDeliveries fills the log with more old events than one
// batch deletes, some delivered, and a few newer: the old go, with their deliveries and
// attempts; the newer stay, with theirs.
func TestRetention_OldEventsGoWithTheirDeliveries(t *testing.T) {
	pool := dbtest.Pool(t)
	ctx := context.Background()
	for _, sql := range []string{
		`INSERT INTO event_subscriptions (id, name, url, secret, secret_key_id) VALUES (gen_random_uuid(), 'hook', 'https://hook.example', '\x00', 'k')`,
		`INSERT INTO event_log (source_kind, event_id, type, subject, payload, received_at)
		 SELECT 'webhook', 'old-' || n, 'vm.stopped', 'vm', '{}', now() - interval '31 days' - n * interval '1 second' FROM generate_series(1, 5003) n`,
		`INSERT INTO event_log (source_kind, event_id, type, subject, payload, received_at) VALUES
		 ('webhook', 'kept-29-days', 'vm.stopped', 'vm', '{}', now() - interval '29 days'),
		 ('nimbus', 'kept-now', 'deployment.failed', 'web', '{}', now())`,
		`INSERT INTO event_deliveries (subscription_id, event_id, status, attempts)
		 SELECT s.id, l.id, 'failed', 1 FROM event_subscriptions s, event_log l WHERE l.event_id IN ('old-1', 'old-5003', 'kept-29-days')`,
		`INSERT INTO event_delivery_attempts (delivery_id, attempt, status_code) SELECT id, 1, 503 FROM event_deliveries`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}

	if err := NewRetainer(pool, 30*24*time.Hour).Work(ctx, nil); err != nil {
		t.Fatal(err)
	}
	var old, kept, deliveries, attempts int
	err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM event_log WHERE event_id LIKE 'old-%'), (SELECT count(*) FROM event_log),
		(SELECT count(*) FROM event_deliveries d JOIN event_log l ON l.id = d.event_id WHERE l.event_id = 'kept-29-days'),
		(SELECT count(*) FROM event_delivery_attempts)`).Scan(&old, &kept, &deliveries, &attempts)
	if err != nil {
		t.Fatal(err)
	}
	if old != 0 || kept != 2 {
		t.Fatalf("%d old events left, %d events in all; want none old and the 2 newer", old, kept)
	}
	var allDeliveries int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM event_deliveries`).Scan(&allDeliveries); err != nil {
		t.Fatal(err)
	}
	if allDeliveries != 1 || deliveries != 1 || attempts != 1 {
		t.Fatalf("%d deliveries (%d of the kept event) and %d attempts left; want the kept event's one, with its attempt",
			allDeliveries, deliveries, attempts)
	}
}
