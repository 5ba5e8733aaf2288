package localpg

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// running reports whether the postmaster named in the pid file is alive and serves this cluster.
func (s *Server) running() bool {
	pid, ok := s.pidFromFile()
	return ok && servesCluster("/proc", pid, s.pgdata)
}

// servesCluster decides whether process pid, as seen under the proc file system at proc, may be
// the postmaster of the cluster in pgdata. A pid file naming no such process is stale and gets
// deleted; deleting the pid file of a live server makes it shut itself down, so whenever the
// answer cannot be known this says yes.
func servesCluster(proc string, pid int, pgdata string) bool {
	// Signal 0 only checks the process exists. EPERM means it exists under another account.
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	dir := filepath.Join(proc, strconv.Itoa(pid))
	cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
	if errors.Is(err, os.ErrNotExist) {
		return false // exited since
	}
	if err == nil {
		// After a reboot the pid may belong to any process. The postmaster's argv[0] is the
		// postgres binary (other arguments could name anything, such as a path).
		argv0, _, _ := bytes.Cut(cmdline, []byte{0})
		if !bytes.Contains(argv0, []byte("postgres")) {
			return false
		}
	}
	// A live postgres: it may serve another cluster. Postgres's working directory is its PGDATA;
	// comparing files rather than paths copes with symlinks in either. Reading another
	// process's cwd needs ptrace access, which containers often withhold even from root, so
	// an unreadable cwd proves nothing and the process is taken to be ours.
	cwd, err := os.Stat(filepath.Join(dir, "cwd"))
	if err != nil {
		return true
	}
	data, err := os.Stat(pgdata)
	if err != nil {
		return true
	}
	return os.SameFile(cwd, data)
}

func (s *Server) pidFromFile() (int, bool) {
	data, err := os.ReadFile(filepath.Join(s.pgdata, "postmaster.pid"))
	if err != nil {
		return 0, false
	}
	first, _, _ := strings.Cut(string(data), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	return pid, err == nil && pid > 0
}

// removeStalePID deletes a pid file left by a server that died without cleaning up: postgres
// refuses to start while it names a live process, which after a reboot may be any process.
func (s *Server) removeStalePID() error {
	path := filepath.Join(s.pgdata, "postmaster.pid")
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	s.log.Warn("removing stale postgres pid file", "path", path)
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("remove stale postgres pid file: %w", err)
	}
	return nil
}

func (s *Server) stop() error {
	if !s.running() {
		return nil
	}
	out, err := s.command(context.Background(), "pg_ctl", "stop", "-w", "-t", "60", "-m", "fast", "-D", s.pgdata, "-s").CombinedOutput()
	if err != nil {
		return fmt.Errorf("stop postgres: %v: %s", err, bytes.TrimSpace(out))
	}
	s.log.Info("postgres stopped", "dir", s.pgdata)
	return nil
}

// prepareSocketDir creates the socket directory and makes sure it is a directory private to the
// server's account: whoever owns it could put a socket of their own there and pose as the
// database (the password stays theirs to guess: connections require scram-sha-256).
// The fallback in the temp dir has a predictable name, so another local user could have created
// it (or a symlink by that name) first; MkdirAll accepts either without a word.
func (s *Server) prepareSocketDir() error {
	if err := os.MkdirAll(s.socketDir, 0o700); err != nil {
		return fmt.Errorf("create postgres socket directory: %w", err)
	}
	info, err := os.Lstat(s.socketDir)
	if err != nil {
		return fmt.Errorf("inspect postgres socket directory: %w", err)
	}
	if info.Mode()&os.ModeSymlink != 0 || !info.IsDir() {
		return fmt.Errorf("postgres socket directory %s is not a directory (a symlink or a file someone else put there?): remove it if that is safe", s.socketDir)
	}
	owner := int(info.Sys().(*syscall.Stat_t).Uid)
	want, account := os.Geteuid(), "this user"
	if s.cred != nil {
		want, account = int(s.cred.Uid), "the "+s.account+" account"
		if owner == 0 {
			// Made by root, so by this process or another Nimbus as root: hand it over.
			if err := s.chown(s.socketDir); err != nil {
				return err
			}
			owner = want
		}
	}
	if owner != want {
		return fmt.Errorf("postgres socket directory %s belongs to uid %d, not to %s (uid %d) that runs postgres; another user may have created it to intercept database connections: remove it if that is safe", s.socketDir, owner, account, want)
	}
	if info.Mode().Perm() != 0o700 {
		if err := os.Chmod(s.socketDir, 0o700); err != nil {
			return fmt.Errorf("make postgres socket directory %s private: %w", s.socketDir, err)
		}
	}
	return nil
}

// socketDir keeps the socket beside the cluster unless the path would be too long for a Unix
// socket; then it goes to a private directory in the temp dir named after the cluster.
func socketDir(dir string) string {
	own := filepath.Join(dir, "run")
	if len(own) <= maxSocketDir {
		return own
	}
	sum := sha256.Sum256([]byte(dir))
	return filepath.Join(os.TempDir(), "nimbus-pg-"+hex.EncodeToString(sum[:6]))
}

// command runs one of the server binaries in the cluster directory. Its environment is minimal:
// Nimbus's own holds secrets (NIMBUS_SECRET_KEY, NIMBUS_DATABASE_URL, …) that the server and
// everything it runs would inherit, and PG* variables that would change what the tools do.
func (s *Server) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(s.bin, name), args...)
	cmd.Env = []string{"PATH=" + s.bin + ":/usr/local/bin:/usr/bin:/bin", "LC_ALL=C.UTF-8", "TZ=UTC"}
	cmd.Dir = s.dir
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	return cmd
}

func (s *Server) chown(path string) error {
	if s.cred == nil {
		return nil
	}
	if err := os.Chown(path, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
		return fmt.Errorf("hand %s to the postgres account: %w", path, err)
	}
	return nil
}

// makeReachable hands the cluster directory to the unprivileged account and makes sure that
// account can reach it: each ancestor must be searchable, which a home directory often is not.
func (s *Server) makeReachable() error {
	if s.cred == nil {
		return nil
	}
	if err := s.chown(s.dir); err != nil {
		return err
	}
	for d := filepath.Dir(s.dir); ; d = filepath.Dir(d) {
		info, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("inspect %s: %w", d, err)
		}
		if info.Mode().Perm()&0o001 == 0 {
			// Every other user can then pass through it too, so say so, and how to avoid it.
			s.log.Warn("making directory searchable by all users (chmod o+x) so postgres can reach its data; to avoid this, choose a --data-dir outside home directories",
				"dir", d, "reason", fmt.Sprintf("postgres runs as the %s account, which must pass through %s to reach %s", s.account, d, s.dir))
			if err := os.Chmod(d, info.Mode().Perm()|0o001); err != nil {
				return fmt.Errorf("postgres runs as an unprivileged account that cannot reach %s: %w", s.dir, err)
			}
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// FindBinaries returns the directory holding initdb, pg_ctl and postgres: the one on PATH, or
// the newest under the Debian location.
func FindBinaries() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		resolved, err := filepath.EvalSymlinks(p)
		if err == nil {
			p = resolved
		}
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	sort.Slice(matches, func(i, j int) bool { return pgMajor(matches[i]) > pgMajor(matches[j]) })
	if len(matches) > 0 {
		return filepath.Dir(matches[0]), nil
	}
	return "", errors.New("PostgreSQL server binaries (initdb, pg_ctl, postgres) not found on PATH or under /usr/lib/postgresql: install them (Debian: apt-get install postgresql) or set NIMBUS_DATABASE_URL to use an existing server")
}

func pgMajor(path string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(path))))
	return n
}

// lookupUser finds an account; tests replace it to imitate systems without one.
var lookupUser = user.Lookup

// unprivileged returns the account the server runs as when Nimbus runs as root (postgres refuses
// to run as root): the named one, else postgres. Every process of the server's account can read
// the cluster's files, so the account must be dedicated to it: a shared one such as nobody
// would let every process running as nobody read the whole database.
func unprivileged(name string) (*syscall.Credential, string, error) {
	chosen := name != ""
	if !chosen {
		name = "postgres"
	}
	u, err := lookupUser(name)
	if !chosen && errors.As(err, new(user.UnknownUserError)) {
		return nil, "", errors.New(`Nimbus runs as root, postgres refuses to, and there is no "postgres" account to run it as: create that system account (useradd --system postgres) or run Nimbus as a normal user`)
	}
	if err != nil {
		return nil, "", fmt.Errorf("look up account %q to run postgres as: %w", name, err)
	}
	if u.Uid == "0" {
		return nil, "", fmt.Errorf("account %q to run postgres as is root, which postgres refuses", name)
	}
	if u.Username == "nobody" {
		return nil, "", errors.New(`postgres will not run as "nobody": other services run as that account and would be database superusers; create a dedicated account (useradd --system postgres)`)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, "", fmt.Errorf("account %q: uid %q: %w", name, u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, "", fmt.Errorf("account %q: gid %q: %w", name, u.Gid, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, u.Username, nil
}

func flock(ctx context.Context, f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("lock postgres directory: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for postgres lock: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
