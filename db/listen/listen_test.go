package listen_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"nimbus/db/dbtest"
	"nimbus/db/listen"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

func TestHub_WakesTheSubscribersOfAPayload(t *testing.T) {
	pool := dbtest.Pool(t)
	hub := listen.New(pool, "test_channel", slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	mine, stopMine := hub.Subscribe("a")
	defer stopMine()
	other, stopOther := hub.Subscribe("b")
	defer stopOther()
	// The hub handles notifications one at a time, in the order Postgres delivers them, which
	// is the order they were committed in: once a later marker has woken its subscriber, every
	// wake an earlier notification caused has happened, and one that has not never will.
	marker, stopMarker := hub.Subscribe("marker")
	defer stopMarker()
	go hub.Run(ctx)

	wait := func(ch <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: not woken", what)
		}
	}
	notify := func(payload string) {
		t.Helper()
		if _, err := pool.Exec(ctx, "SELECT pg_notify('test_channel', $1)", payload); err != nil {
			t.Fatal(err)
		}
	}
	// settle returns once the hub has handled every notification sent before it.
	settle := func() {
		t.Helper()
		notify("marker")
		wait(marker, "the marker")
	}
	woken := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	// Connecting wakes everyone, so what changed before is read; it also says the hub listens.
	wait(mine, "on connect")
	wait(other, "on connect")
	wait(marker, "on connect")

	notify("a")
	settle()
	if !woken(mine) {
		t.Fatal("the subscriber of a was not woken by a notification for a")
	}
	if woken(other) {
		t.Fatal("the subscriber of b was woken by a notification for a")
	}

	// Many notifications while the reader is busy fold into one wake.
	for range 5 {
		notify("a")
	}
	settle()
	if !woken(mine) {
		t.Fatal("five notifications did not wake the reader")
	}
	if woken(mine) {
		t.Fatal("five notifications woke the reader more than once")
	}

	stopMine()
	notify("a")
	settle()
	if woken(mine) {
		t.Fatal("woken after unsubscribing")
	}
}
