package localpg_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

func query(t *testing.T, s *localpg.Server, sql string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.URL(localpg.DatabaseName))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	var v string
	if err := conn.QueryRow(ctx, sql).Scan(&v); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return v
}

func TestStart_AppliesSettingsAndReplacesThemOnRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s, err := localpg.Start(ctx, localpg.Options{Dir: dir, Settings: map[string]string{"work_mem": "8MB"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := query(t, s, "SHOW work_mem"); got != "8MB" {
		t.Fatalf("work_mem = %s, want 8MB", got)
	}
	if got := query(t, s, "SHOW listen_addresses"); got != "" {
		t.Fatalf("listen_addresses = %q, want only the socket", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// The settings file is rewritten at every start, and postgresql.conf includes it once.
	s, err = localpg.Start(ctx, localpg.Options{Dir: dir, Settings: map[string]string{"work_mem": "16MB"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := query(t, s, "SHOW work_mem"); got != "16MB" {
		t.Fatalf("work_mem after restart = %s, want 16MB", got)
	}
	conf, err := os.ReadFile(filepath.Join(dir, "pgdata", "postgresql.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(conf), "postgresql.nimbus.conf'"); n != 1 {
		t.Fatalf("postgresql.conf includes the settings file %d times, want 1", n)
	}
}

func TestStart_DataDirWithQuotesAndShellCharacters(t *testing.T) {
	// A path that would have run a command had it reached pg_ctl's shell command line.
	const name = `it's a "dir" $(touch pwned) ` + "`touch pwned`"
	for _, tc := range []struct{ what, parent string }{
		// Short enough to keep the socket beside the cluster…
		{"socket beside the cluster", shortTempDir(t)},
		// …and so long that the socket moves to the temp dir.
		{"socket in the temp dir", filepath.Join(t.TempDir(), strings.Repeat("d", 60))},
	} {
		t.Run(tc.what, func(t *testing.T) {
			dir := filepath.Join(tc.parent, name)
			// The temp-dir socket directory is named after the cluster's path and outlives it.
			sum := sha256.Sum256([]byte(dir))
			t.Cleanup(func() { os.Remove(filepath.Join(os.TempDir(), "nimbus-pg-"+hex.EncodeToString(sum[:6]))) })
			s, err := localpg.Start(context.Background(), localpg.Options{Dir: dir, Settings: map[string]string{"application_name": `it's \ "quoted"`}})
			if err != nil {
				t.Fatal(err)
			}
			ping(t, s)
			if got := query(t, s, "SELECT current_setting('application_name')"); got != `it's \ "quoted"` {
				t.Errorf("application_name = %q", got)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			for _, d := range []string{dir, tc.parent} {
				if _, err := os.Stat(filepath.Join(d, "pwned")); err == nil {
					t.Fatalf("a command in the data dir's path ran (found %s)", filepath.Join(d, "pwned"))
				}
			}
		})
	}
}

// shortTempDir is a temporary directory with a short path, leaving room under the Unix socket
// path limit for a long name.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "lpg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func TestStart_KeepsNimbusEnvironmentFromServer(t *testing.T) {
	t.Setenv("NIMBUS_SECRET_KEY", "do-not-leak")
	t.Setenv("PGPORT", "1")
	dir := t.TempDir()
	s, err := localpg.Start(context.Background(), localpg.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pidOf(t, dir)))
	if err != nil {
		t.Skipf("cannot read the server's environment: %v", err)
	}
	// Beyond what Nimbus passes: pg_ctl and postgres set the PG* ones themselves, and the shell
	// pg_ctl starts the server through may set PWD.
	allowed := map[string]bool{"PATH": true, "LC_ALL": true, "TZ": true, "PWD": true,
		"PGDATA": true, "PGLOCALEDIR": true, "PGSYSCONFDIR": true, "PG_GRANDPARENT_PID": true}
	for _, kv := range strings.Split(strings.TrimRight(string(environ), "\x00"), "\x00") {
		k, _, _ := strings.Cut(kv, "=")
		if !allowed[k] {
			t.Errorf("server environment holds %s", kv)
		}
	}
}

func TestStart_WarnsWhenMakingParentsSearchable(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root runs postgres as another account")
	}
	parent := t.TempDir()
	if err := os.Chmod(parent, 0o700); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	s, err := localpg.Start(context.Background(), localpg.Options{Dir: filepath.Join(parent, "pg"), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var warned bool
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, "dir="+parent+" ") && strings.Contains(line, "--data-dir") {
			warned = true
		}
	}
	if !warned {
		t.Fatalf("no warning about making %s searchable:\n%s", parent, logs.String())
	}
}
