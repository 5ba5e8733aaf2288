package localpg_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"nimbus/db/localpg"
)

// kill kills the cluster's postmaster outright, as the kernel's OOM killer would, and waits
// until it is gone.
func kill(t *testing.T, dir string) {
	t.Helper()
	pid := pidOf(t, dir)
	if pid == 0 {
		t.Fatal("no postmaster to kill")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("postmaster %d still alive after SIGKILL", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestSupervisor_RestartsAKilledServerWithItsData(t *testing.T) {
	dir := shortTempDir(t)
	ctx := context.Background()
	var logs bytes.Buffer
	srv, err := localpg.Start(ctx, localpg.Options{Dir: dir, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	conn, err := pgx.Connect(ctx, srv.URL(localpg.DatabaseName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('before the crash')"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)

	var restarts atomic.Int32
	sv := srv.Supervise(localpg.Supervision{Every: 50 * time.Millisecond, Restarted: func() { restarts.Add(1) }})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- sv.Run(runCtx) }()

	before := pidOf(t, dir)
	kill(t, dir)
	deadline := time.Now().Add(time.Minute)
	for restarts.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("postgres was not restarted:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if sv.Down() || sv.Alive() != nil {
		t.Fatalf("after the restart: down %v, alive %v", sv.Down(), sv.Alive())
	}
	if after := pidOf(t, dir); after == before || after == 0 {
		t.Fatalf("postmaster pid %d before and %d after", before, after)
	}
	// Crash recovery replayed what was committed before the kill.
	if got := query(t, srv, "SELECT v FROM kept"); got != "before the crash" {
		t.Fatalf("after the restart the table holds %q", got)
	}
	if n := strings.Count(logs.String(), "postgres stopped unexpectedly"); n != 1 {
		t.Fatalf("the crash was logged %d times:\n%s", n, logs.String())
	}

	stop()
	if err := <-done; err != nil {
		t.Fatalf("supervision ended with %v", err)
	}
	if restarts.Load() != 1 {
		t.Fatalf("%d restarts, want 1", restarts.Load())
	}
}

func TestSupervisor_GivesUpOnAServerThatCannotStart(t *testing.T) {
	dir := shortTempDir(t)
	ctx := context.Background()
	srv, err := localpg.Start(ctx, localpg.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	pgdata := filepath.Join(dir, "pgdata")
	t.Cleanup(func() {
		_ = os.Chmod(pgdata, 0o700)
		srv.Close()
	})
	// Postgres refuses a data directory others can read: every restart fails.
	if err := os.Chmod(pgdata, 0o755); err != nil {
		t.Fatal(err)
	}
	sv := srv.Supervise(localpg.Supervision{Every: 50 * time.Millisecond, GiveUpAfter: 2 * time.Second})
	done := make(chan error, 1)
	go func() { done <- sv.Run(ctx) }()
	kill(t, dir)

	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "could not be restarted") {
			t.Fatalf("supervision ended with %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("supervision did not give up")
	}
	if !sv.Down() || sv.Alive() == nil {
		t.Fatalf("after giving up: down %v, alive %v", sv.Down(), sv.Alive())
	}
}
