package localpg_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"nimbus/db/localpg"
)

func ping(t *testing.T, s *localpg.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.URL(localpg.DatabaseName))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("select 1: %v %d", err, one)
	}
}

func pidOf(t *testing.T, dir string) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "pgdata", "postmaster.pid"))
	if err != nil {
		return 0
	}
	for i, c := range data {
		if c == '\n' {
			pid, _ := strconv.Atoi(string(data[:i]))
			return pid
		}
	}
	return 0
}

func TestStart_CreatesClusterStopsOnLastCloseAndReuses(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()

	first, err := localpg.Start(ctx, localpg.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ping(t, first)

	// A second user of the same directory shares the running server.
	second, err := localpg.Start(ctx, localpg.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	pid := pidOf(t, dir)
	if err := second.Close(); err != nil {
		t.Fatal(err)
	}
	ping(t, first)
	if got := pidOf(t, dir); got != pid {
		t.Fatalf("server restarted while in use: pid %d then %d", pid, got)
	}

	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "pgdata", "postmaster.pid")); !os.IsNotExist(err) {
		t.Fatalf("postgres still running after the last user closed: %v", err)
	}

	again, err := localpg.Start(ctx, localpg.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ping(t, again)
	if err := again.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestStart_RecoversFromStalePIDFile(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s, err := localpg.Start(ctx, localpg.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A crash leaves the pid file behind; after a reboot its pid may belong to anything, here
	// to this test process.
	stale := strconv.Itoa(os.Getpid()) + "\n" + filepath.Join(dir, "pgdata") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "pgdata", "postmaster.pid"), []byte(stale), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err = localpg.Start(ctx, localpg.Options{Dir: dir})
	if err != nil {
		t.Fatalf("start over a stale pid file: %v", err)
	}
	ping(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
