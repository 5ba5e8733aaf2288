package event

import (
	"context"
	"testing"
	"time"

	"nimbus/app/kernel/outbox"
	"nimbus/db"
	"nimbus/db/dbtest"
)

// The sweep is queued only while an event waits: Waiting says so from the start, no longer
// once it has looked and found none, and again once one of Nimbus's own events is logged.
func TestWaiting_SaysWhetherAnEventWaits(t *testing.T) {
	pool := dbtest.Pool(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := NewWaiting(pool)
	if !w.Any() {
		t.Fatal("before it has looked, Waiting says nothing waits")
	}
	if SweepSchedule(w) == nil {
		t.Fatal("no schedule")
	}
	go w.Watch(ctx)
	until := func(want bool) {
		t.Helper()
		for deadline := time.Now().Add(2 * time.Minute); w.Any() != want; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("Waiting still says %v", !want)
			}
		}
	}
	until(false)
	if err := outbox.Emit(ctx, db.Queries(pool), outbox.Event{Type: "deployment.failed", Subject: "web"}); err != nil {
		t.Fatal(err)
	}
	until(true)
}
