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
	go hub.Run(ctx)

	wait := func(ch <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: not woken", what)
		}
	}
	// Connecting wakes everyone, so what changed before is read.
	wait(mine, "on connect")
	wait(other, "on connect")

	if _, err := pool.Exec(ctx, "SELECT pg_notify('test_channel', 'a')"); err != nil {
		t.Fatal(err)
	}
	wait(mine, "after a notification for a")
	select {
	case <-other:
		t.Fatal("the subscriber of b was woken by a notification for a")
	case <-time.After(200 * time.Millisecond):
	}

	// Many notifications while the reader is busy fold into one wake.
	for range 5 {
		if _, err := pool.Exec(ctx, "SELECT pg_notify('test_channel', 'a')"); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(300 * time.Millisecond)
	wait(mine, "after five notifications")
	select {
	case <-mine:
		t.Fatal("five notifications woke the reader more than once")
	case <-time.After(200 * time.Millisecond):
	}

	stopMine()
	if _, err := pool.Exec(ctx, "SELECT pg_notify('test_channel', 'a')"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-mine:
		t.Fatal("woken after unsubscribing")
	case <-time.After(200 * time.Millisecond):
	}
}
