package localpg

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

	"github.com/jackc/pgx/v5/pgconn"
)

func TestServesCluster(t *testing.T) {
	srv, err := Start(context.Background(), Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	server, ok := srv.pidFromFile()
	if !ok {
		t.Fatal("no pid file for the running server")
	}

	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	dead := exited.Process.Pid

	// A fake proc tree for what the real one will not show here: a process whose cwd cannot
	// be read (no ptrace access in a container), or one that serves another cluster. The pid
	// is this test's own, so that the process is alive.
	self := os.Getpid()
	fake := func(t *testing.T, cwd string) string {
		proc := t.TempDir()
		dir := filepath.Join(proc, strconv.Itoa(self))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cmdline"), []byte("/usr/lib/postgresql/15/bin/postgres\x00-D\x00pgdata\x00"), 0o600); err != nil {
			t.Fatal(err)
		}
		if cwd != "" {
			if err := os.Symlink(cwd, filepath.Join(dir, "cwd")); err != nil {
				t.Fatal(err)
			}
		}
		return proc
	}
	cluster := srv.pgdata
	for _, tc := range []struct {
		name   string
		proc   func(t *testing.T) string
		pid    int
		pgdata string
		want   bool
	}{
		{"dead process", func(*testing.T) string { return "/proc" }, dead, cluster, false},
		{"live process that is not postgres", func(*testing.T) string { return "/proc" }, self, cluster, false},
		{"live postgres serving this cluster", func(*testing.T) string { return "/proc" }, server, cluster, true},
		{"live postgres serving another cluster", func(*testing.T) string { return "/proc" }, server, t.TempDir(), false},
		{"live postgres whose cwd cannot be read", func(t *testing.T) string { return fake(t, "") }, self, cluster, true},
		{"live postgres whose cwd is this cluster through a symlink", func(t *testing.T) string {
			link := filepath.Join(t.TempDir(), "link")
			if err := os.Symlink(cluster, link); err != nil {
				t.Fatal(err)
			}
			return fake(t, link)
		}, self, cluster, true},
		{"live postgres whose cwd is elsewhere", func(t *testing.T) string { return fake(t, t.TempDir()) }, self, cluster, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := servesCluster(tc.proc(t), tc.pid, tc.pgdata); got != tc.want {
				t.Fatalf("servesCluster = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestUnprivileged(t *testing.T) {
	accounts := map[string]*user.User{
		"postgres": {Username: "postgres", Uid: "101", Gid: "104"},
		"nobody":   {Username: "nobody", Uid: "65534", Gid: "65534"},
		"root":     {Username: "root", Uid: "0", Gid: "0"},
		"pgsvc":    {Username: "pgsvc", Uid: "990", Gid: "990"},
	}
	lookup := func(without ...string) func(string) (*user.User, error) {
		return func(name string) (*user.User, error) {
			for _, w := range without {
				if name == w {
					return nil, user.UnknownUserError(name)
				}
			}
			if u, ok := accounts[name]; ok {
				return u, nil
			}
			return nil, user.UnknownUserError(name)
		}
	}
	defer func(orig func(string) (*user.User, error)) { lookupUser = orig }(lookupUser)

	for _, tc := range []struct {
		name, runAs string
		without     []string
		wantUID     uint32
		wantErr     string
	}{
		{"postgres by default", "", nil, 101, ""},
		{"named account", "pgsvc", nil, 990, ""},
		{"never nobody, even without postgres", "", []string{"postgres"}, 0, "useradd --system postgres"},
		{"not nobody when named", "nobody", nil, 0, "nobody"},
		{"not root", "root", nil, 0, "root"},
		{"named account missing", "ghost", nil, 0, "ghost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lookupUser = lookup(tc.without...)
			cred, _, err := unprivileged(tc.runAs)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cred.Uid != tc.wantUID {
				t.Fatalf("uid = %d, want %d", cred.Uid, tc.wantUID)
			}
		})
	}
}

func TestSettingsConf_QuotesValuesAndRejectsBadNames(t *testing.T) {
	conf, err := settingsConf(`/tmp/it's "here"`, map[string]string{"application_name": "a'b\\c\nd", "work_mem": "8MB"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`unix_socket_directories = '"/tmp/it''s ""here"""'` + "\n",
		`application_name = 'a''b\\c\nd'` + "\n",
		"work_mem = '8MB'\n",
		"listen_addresses = ''\n",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("settings lack %q:\n%s", want, conf)
		}
	}
	for _, bad := range []string{"work_mem = '1GB'\nshared_preload_libraries", "", "a b", "1x", "hba_file", "HBA_File", "ident_file", "config_file"} {
		if _, err := settingsConf("/run", map[string]string{bad: "x"}); err == nil {
			t.Errorf("setting name %q accepted", bad)
		}
	}
}

func TestURL_QuotesSocketDirectoryAndPassword(t *testing.T) {
	for _, dir := range []string{"/tmp/plain/run", `/tmp/it's a \dir/run`} {
		// A password an operator wrote back into the file may hold anything but a line break.
		const password = `pa ss'wo\rd`
		s := &Server{socketDir: dir, password: password}
		cfg, err := pgconn.ParseConfig(s.URL(DatabaseName))
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		if cfg.Host != dir || cfg.Database != DatabaseName || cfg.User != superuser || cfg.Password != password {
			t.Errorf("%s: parsed host %q database %q user %q password %q", dir, cfg.Host, cfg.Database, cfg.User, cfg.Password)
		}
	}
}

func TestPrepareSocketDir_RefusesDirectoriesItDoesNotOwn(t *testing.T) {
	s := &Server{}
	if os.Geteuid() == 0 {
		var err error
		if s.cred, s.account, err = unprivileged(""); err != nil {
			t.Skip(err)
		}
	}
	ownerOf := func(path string) (int, os.FileMode) {
		info, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		return int(info.Sys().(*syscall.Stat_t).Uid), info.Mode().Perm()
	}
	server := os.Geteuid()
	if s.cred != nil {
		server = int(s.cred.Uid)
	}

	t.Run("own directory made private", func(t *testing.T) {
		s.socketDir = filepath.Join(t.TempDir(), "run")
		if err := os.Mkdir(s.socketDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := s.prepareSocketDir(); err != nil {
			t.Fatal(err)
		}
		if uid, perm := ownerOf(s.socketDir); uid != server || perm != 0o700 {
			t.Fatalf("socket dir owned by %d with mode %o, want %d and 700", uid, perm, server)
		}
	})
	t.Run("symlink", func(t *testing.T) {
		s.socketDir = filepath.Join(t.TempDir(), "run")
		if err := os.Symlink(t.TempDir(), s.socketDir); err != nil {
			t.Fatal(err)
		}
		if err := s.prepareSocketDir(); err == nil || !strings.Contains(err.Error(), s.socketDir) {
			t.Fatalf("err = %v, want a refusal naming %s", err, s.socketDir)
		}
	})
	t.Run("another user's directory", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root to make a directory owned by another user")
		}
		s.socketDir = filepath.Join(t.TempDir(), "run")
		if err := os.Mkdir(s.socketDir, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(s.socketDir, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(s.socketDir, 0o777); err != nil { // past the umask
			t.Fatal(err)
		}
		if err := s.prepareSocketDir(); err == nil || !strings.Contains(err.Error(), s.socketDir) {
			t.Fatalf("err = %v, want a refusal naming %s", err, s.socketDir)
		}
		if _, perm := ownerOf(s.socketDir); perm != 0o777 {
			t.Fatalf("changed the mode of another user's directory to %o", perm)
		}
	})
}

// The temp-dir fallback for the socket has a predictable name; a directory another user made
// there first must stop the start, not be used.
func TestStart_RefusesHijackedSocketDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a directory owned by another user")
	}
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 80))
	sock := socketDir(dir)
	if !strings.HasPrefix(sock, os.TempDir()) {
		t.Fatalf("socket dir %s is not the temp-dir fallback", sock)
	}
	if err := os.Mkdir(sock, 0o777); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sock) })
	if err := os.Chown(sock, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	s, err := Start(context.Background(), Options{Dir: dir})
	if err == nil {
		s.Close()
		t.Fatal("started with a socket directory owned by another user")
	}
	if !strings.Contains(err.Error(), sock) {
		t.Fatalf("err = %v, want it to name %s", err, sock)
	}
}
