package apptest

import (
	"context"
	"testing"

	"github.com/riverqueue/river/rivertest"

	"nimbus/app/domain/notification"
	"nimbus/app/kernel/outbox"
	"nimbus/app/orchestration/event"
	"nimbus/app/server"
	"nimbus/db"
)

// RouteEvents routes every event waiting in the log as the server's sweep does, running the
// reactions the server wires, and queues what they queue without working it.
func (w *World) RouteEvents(t *testing.T) {
	t.Helper()
	ctx := rivertest.WorkContext(context.Background(), insertOnly(t, w.Pool))
	Must(t, event.NewSweeper(server.Router(w.Pool, w.Keys)).Work(ctx, nil))
}

// Notice is a notification of A's user: their elevation ended.
func (w *World) Notice(t *testing.T) notification.Notification {
	return Fixture(w, "notice", func() notification.Notification {
		ctx := context.Background()
		Must(t, outbox.Emit(ctx, db.Queries(w.Pool), outbox.Event{Type: "elevation.ended",
			Data: map[string]any{"user_id": w.UserA.UserID, "role": "user"}}))
		w.RouteEvents(t)
		list, err := w.Notices.List(ctx, w.UserA, notification.Filter{})
		Must(t, err)
		if len(list) != 1 {
			t.Fatalf("A's user's inbox: %+v", list)
		}
		return list[0]
	})
}
