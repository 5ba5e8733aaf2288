package localpg_test

import (
	"context"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"

	"nimbus/db/localpg"
)

// connectWithout connects to the cluster as its URL says, with the password given instead.
func connectWithout(t *testing.T, s *localpg.Server, password string) error {
	t.Helper()
	cfg, err := pgx.ParseConfig(s.URL(localpg.DatabaseName))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Password = password
	conn, err := pgx.ConnectConfig(t.Context(), cfg)
	if err == nil {
		conn.Close(t.Context())
	}
	return err
}

// No connection is trusted: one without the password, or with a wrong one, is refused, and
// the URL every user of the cluster is given carries the password kept in a 0600 file.
func TestStart_AsksEveryConnectionForThePassword(t *testing.T) {
	dir := t.TempDir()
	s, err := localpg.Start(t.Context(), localpg.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ping(t, s)
	for _, pw := range []string{"", "wrong"} {
		if err := connectWithout(t, s, pw); err == nil || !strings.Contains(err.Error(), "password") {
			t.Errorf("password %q: %v", pw, err)
		}
	}
	info, err := os.Stat(filepath.Join(dir, "password"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("the password file: %v %v", info, err)
	}
	// A second user of the cluster gets the same password.
	other, err := localpg.Start(t.Context(), localpg.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ping(t, other)
	if other.URL("x") != s.URL("x") {
		t.Fatal("two users of one cluster were given different URLs")
	}
	pw, _ := os.ReadFile(filepath.Join(dir, "password"))
	log, _ := os.ReadFile(filepath.Join(dir, "postgres.log"))
	if strings.Contains(string(log), strings.TrimSpace(string(pw))) {
		t.Fatal("the server's log holds the password")
	}
}

// A cluster an earlier Nimbus made, trusting every connection on its socket, is closed at its
// next start: a connection without the password, or with a wrong one, is refused.
func TestStart_ClosesAClusterThatTrusted(t *testing.T) {
	dir := t.TempDir()
	pgdata := filepath.Join(dir, "pgdata")
	bin, err := localpg.FindBinaries()
	if err != nil {
		t.Fatal(err)
	}
	// Made as earlier versions made it: initdb --auth=trust, run by the postgres account when
	// the test runs as root.
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatal(err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	run := func(name string, args ...string) {
		cmd := exec.Command(filepath.Join(bin, name), args...)
		cmd.Dir = dir
		if cred != nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
	}
	run("initdb", "-D", "pgdata", "-U", "nimbus", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8")
	if b, _ := os.ReadFile(filepath.Join(pgdata, "pg_hba.conf")); !strings.Contains(string(b), "trust") {
		t.Fatal("the old cluster does not trust its connections")
	}
	s, err := localpg.Start(context.Background(), localpg.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ping(t, s)
	if err := connectWithout(t, s, ""); err == nil {
		t.Fatal("a connection without the password was let in")
	}
	if err := connectWithout(t, s, "wrong"); err == nil || !strings.Contains(err.Error(), "password") {
		t.Fatalf("a wrong password: %v", err)
	}
}
