package localpg_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"nimbus/db/localpg"
)

// sharerDir, set in a test binary's environment, makes it a process that shares a cluster
// (see TestStart_ProcessesShareTheClusterAndItsPassword) instead of running the tests.
const sharerDir = "LOCALPG_TEST_SHARER_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(sharerDir); dir != "" {
		if err := share(dir); err != nil {
			fmt.Fprintln(os.Stderr, "sharer:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// share starts the cluster in dir as any process using it does, connects with the URL it is
// given, prints a digest of that URL's password and keeps the cluster until its standard input
// closes.
func share(dir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := localpg.Start(ctx, localpg.Options{Dir: dir})
	if err != nil {
		return err
	}
	defer s.Close()
	conn, err := pgx.Connect(ctx, s.URL(localpg.DatabaseName))
	if err != nil {
		return err
	}
	conn.Close(ctx)
	fmt.Println(digest(passwordIn(s.URL(localpg.DatabaseName))))
	_, err = io.Copy(io.Discard, os.Stdin)
	return err
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// passwordIn is the password a connection string carries.
func passwordIn(url string) string {
	cfg, err := pgconn.ParseConfig(url)
	if err != nil {
		panic(err)
	}
	return cfg.Password
}

// passwordFile reads the cluster's password file, checking it is private to this account.
func passwordFile(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "password")
	info, err := os.Stat(path)
	if err != nil {
		t.Fatalf("the password file: %v", err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("the password file has mode %o, want 600", info.Mode().Perm())
	}
	if uid := info.Sys().(*syscall.Stat_t).Uid; int(uid) != os.Geteuid() {
		t.Errorf("the password file belongs to uid %d, not to the account Nimbus runs as (%d)", uid, os.Geteuid())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pw := strings.TrimSpace(string(b))
	if len(pw) < 32 {
		t.Fatalf("the password is %d characters long", len(pw))
	}
	return pw
}

// connectWith connects to the cluster as its URL says, with the password given instead.
func connectWith(t *testing.T, s *localpg.Server, password string) error {
	t.Helper()
	cfg, err := pgx.ParseConfig(s.URL(localpg.DatabaseName))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Password = password
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err == nil {
		conn.Close(ctx)
	}
	return err
}

// refusesWithoutPassword checks that a connection on the socket without the password, or with
// a wrong one, fails to authenticate.
func refusesWithoutPassword(t *testing.T, s *localpg.Server) {
	t.Helper()
	for _, pw := range []string{"", "wrong"} {
		err := connectWith(t, s, pw)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "28P01" {
			t.Errorf("with password %q: %v, want an authentication failure (28P01)", pw, err)
		}
	}
}

func TestStart_RefusesConnectionsWithoutThePassword(t *testing.T) {
	dir := t.TempDir()
	s, err := localpg.Start(t.Context(), localpg.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ping(t, s)
	refusesWithoutPassword(t, s)
	if passwordIn(s.URL(localpg.DatabaseName)) != passwordFile(t, dir) {
		t.Fatal("the URL does not carry the password kept in the password file")
	}
}

// trustingCluster makes a cluster in a new directory as Nimbus did before it had a password,
// trusting every connection on its socket, with a row in a table of Nimbus's database.
func trustingCluster(t *testing.T) string {
	t.Helper()
	dir := shortTempDir(t)
	bin, err := localpg.FindBinaries()
	if err != nil {
		t.Fatal(err)
	}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatal(err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		// Its parent is the temp dir, which every account may pass through.
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	run := func(name string, args ...string) {
		t.Helper()
		cmd := exec.Command(filepath.Join(bin, name), args...)
		cmd.Dir = dir
		cmd.Env = []string{"LC_ALL=C.UTF-8"}
		if cred != nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
	}
	run("initdb", "-D", "pgdata", "-U", "nimbus", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8")
	sock := filepath.Join(dir, "run")
	if err := os.Mkdir(sock, 0o700); err != nil {
		t.Fatal(err)
	}
	if cred != nil {
		if err := os.Chown(sock, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	conf, err := os.OpenFile(filepath.Join(dir, "pgdata", "postgresql.conf"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conf, "listen_addresses = ''\nunix_socket_directories = '%s'\n", sock)
	if err := conf.Close(); err != nil {
		t.Fatal(err)
	}
	run("pg_ctl", "start", "-w", "-D", "pgdata", "-l", "postgres.log", "-s")
	defer run("pg_ctl", "stop", "-w", "-m", "fast", "-D", "pgdata", "-s")

	// Any process that could reach the socket got in without a password.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := func(db string) string { return fmt.Sprintf("host=%s user=nimbus dbname=%s sslmode=disable", sock, db) }
	admin, err := pgx.Connect(ctx, url("postgres"))
	if err != nil {
		t.Fatalf("the old cluster refused a connection without a password: %v", err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+localpg.DatabaseName); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url(localpg.DatabaseName))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('made before the password')"); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A cluster an earlier Nimbus made, trusting every connection on its socket, asks for the
// password from its next start on, and keeps its data; an edit of pg_hba.conf that trusts
// again is undone at the start after.
func TestStart_ClosesAClusterThatTrustedAndKeepsItsData(t *testing.T) {
	dir := trustingCluster(t)
	s, err := localpg.Start(t.Context(), localpg.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	refusesWithoutPassword(t, s)
	if got := query(t, s, "SELECT v FROM kept"); got != "made before the password" {
		t.Fatalf("after the start the table holds %q", got)
	}
	if passwordIn(s.URL(localpg.DatabaseName)) != passwordFile(t, dir) {
		t.Fatal("the URL does not carry the password kept in the password file")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	hba := filepath.Join(dir, "pgdata", "pg_hba.conf")
	if err := os.WriteFile(hba, []byte("local all all trust\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err = localpg.Start(t.Context(), localpg.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	refusesWithoutPassword(t, s)
	ping(t, s)
}

// A start that crashed while closing a trusting cluster — after writing the password file,
// before setting the password — leaves the password in temporary files too; the next start
// sets the password from the file, closes the cluster and removes those files.
func TestStart_FinishesClosingAClusterAfterACrash(t *testing.T) {
	dir := trustingCluster(t)
	const kept = "a-password-the-crashed-start-made-0123456789"
	for name, content := range map[string]string{"password": kept, ".password-123": kept, ".initdb-password-456": kept} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s, err := localpg.Start(t.Context(), localpg.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	refusesWithoutPassword(t, s)
	if got := passwordIn(s.URL(localpg.DatabaseName)); got != kept {
		t.Fatal("the start did not keep the password the crashed one wrote")
	}
	if got := query(t, s, "SELECT v FROM kept"); got != "made before the password" {
		t.Fatalf("after the start the table holds %q", got)
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".*password-*"))
	if len(left) > 0 {
		t.Fatalf("temporary password files left: %v", left)
	}
}

// A lost password file is not the end of the cluster: the next start sets a new password, and
// the old one no longer opens it.
func TestStart_SetsANewPasswordWhenItsFileIsLost(t *testing.T) {
	dir := t.TempDir()
	s, err := localpg.Start(t.Context(), localpg.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	old := passwordFile(t, dir)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "password")); err != nil {
		t.Fatal(err)
	}
	s, err = localpg.Start(t.Context(), localpg.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ping(t, s)
	if passwordFile(t, dir) == old {
		t.Fatal("the new password is the old one")
	}
	var pgErr *pgconn.PgError
	if err := connectWith(t, s, old); !errors.As(err, &pgErr) || pgErr.Code != "28P01" {
		t.Fatalf("the old password: %v, want an authentication failure", err)
	}
}

// watchProcesses records the command line and environment of every process it sees until the
// returned function is called, which looks once more and returns what was seen.
func watchProcesses(t *testing.T) func() map[string]int {
	t.Helper()
	seen := map[string]int{} // what a process showed → its pid
	look := func() {
		entries, err := os.ReadDir("/proc")
		if err != nil {
			t.Error(err)
			return
		}
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			environ, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
			// Kept by content: a process's command line changes when it execs, and postgres
			// rewrites its own.
			seen[string(cmdline)+"\n"+string(environ)] = pid
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			look()
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	return func() map[string]int {
		close(stop)
		wg.Wait()
		look()
		return seen
	}
}

// The password is in no log, command line or environment: not in what Nimbus logs, not in
// the server's log (connections refused for a wrong password among it), not in any process
// seen while a new cluster is made and while an old one is closed.
func TestStart_KeepsThePasswordOutOfLogsAndCommandLines(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cluster func(t *testing.T) string
	}{
		{"new cluster", func(t *testing.T) string { return t.TempDir() }},
		{"cluster that trusted", trustingCluster},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.cluster(t)
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			done := watchProcesses(t)
			s, err := localpg.Start(t.Context(), localpg.Options{Dir: dir, Logger: log})
			seen := done()
			if err != nil {
				t.Fatal(err)
			}
			ping(t, s)
			refusesWithoutPassword(t, s)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			pw := passwordFile(t, dir)

			var ours int
			for what, pid := range seen {
				if strings.Contains(what, pw) {
					t.Errorf("process %d's command line or environment holds the password: %q", pid, what)
				}
				if strings.Contains(what, "postgres") {
					ours++
				}
			}
			if ours == 0 {
				t.Fatal("no postgres process was seen while the cluster started")
			}
			serverLog, err := os.ReadFile(filepath.Join(dir, "postgres.log"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(serverLog, []byte("password authentication failed")) {
				t.Fatalf("the server's log lacks the refused connections:\n%s", serverLog)
			}
			for what, text := range map[string][]byte{"the server's log": serverLog, "Nimbus's log": logs.Bytes()} {
				if bytes.Contains(text, []byte(pw)) {
					t.Errorf("%s holds the password", what)
				}
			}
		})
	}
}

// Processes started together on one directory share one cluster and one password: each is
// given the password in the file, and each gets in with it.
func TestStart_ProcessesShareTheClusterAndItsPassword(t *testing.T) {
	dir := t.TempDir()
	type sharer struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		said  chan string
	}
	var sharers []*sharer
	for range 2 {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), sharerDir+"="+dir)
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sh := &sharer{cmd: cmd, stdin: stdin, said: make(chan string, 1)}
		go func() {
			line, _ := bufio.NewReader(stdout).ReadString('\n')
			sh.said <- strings.TrimSpace(line)
		}()
		t.Cleanup(func() {
			stdin.Close()
			cmd.Wait()
		})
		sharers = append(sharers, sh)
	}

	s, err := localpg.Start(t.Context(), localpg.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ping(t, s)
	want := digest(passwordFile(t, dir))
	if got := digest(passwordIn(s.URL(localpg.DatabaseName))); got != want {
		t.Fatal("this process was not given the password in the file")
	}
	pid := pidOf(t, dir)
	for i, sh := range sharers {
		select {
		case got := <-sh.said:
			if got != want {
				t.Fatalf("process %d was given another password (digest %q)", i, got)
			}
		case <-time.After(2 * time.Minute):
			t.Fatalf("process %d did not start its use of the cluster", i)
		}
	}
	if got := pidOf(t, dir); got != pid {
		t.Fatalf("the processes ran servers %d and %d", pid, got)
	}
	for i, sh := range sharers {
		sh.stdin.Close()
		if err := sh.cmd.Wait(); err != nil {
			t.Fatalf("process %d: %v", i, err)
		}
	}
	ping(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "pgdata", "postmaster.pid")); !os.IsNotExist(err) {
		t.Fatalf("postgres still runs after the last process left: %v", err)
	}
}
