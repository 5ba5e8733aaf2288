// Package localpg runs a PostgreSQL cluster that lives in Nimbus's data directory, from the
// server binaries installed on the system.
//
// Several processes may share one cluster: the server and a CLI command run beside it, or the
// test binaries of several packages. Each user holds a shared lock on users.lock while it uses
// the cluster; the last one out (the one that can then take that lock exclusively) stops the
// server. Starting and stopping both happen under start.lock, so a start never races a stop.
package localpg

import (
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
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// DatabaseName is the database Nimbus keeps its data in inside the cluster.
const DatabaseName = "nimbus"

const (
	superuser = "nimbus"
	port      = 5432
	// Unix socket paths are limited to 107 bytes; beyond this the socket moves to the temp dir.
	maxSocketDir = 80
)

// Options say where the cluster lives and how it runs.
type Options struct {
	// Dir holds the cluster: Dir/pgdata is PGDATA.
	Dir string
	// Logger receives the server's lifecycle events; the server's own log goes to Dir/postgres.log.
	Logger *slog.Logger
	// Settings are extra server settings (name → value), passed with -c.
	Settings map[string]string
	// RunAs is the unprivileged account to run the server as when Nimbus runs as root.
	// Empty means "postgres" if that account exists, else "nobody".
	RunAs string
}

// Server is a running cluster this process uses. Close releases it and stops the server when
// no other process uses it.
type Server struct {
	dir       string
	pgdata    string
	socketDir string
	bin       string
	cred      *syscall.Credential
	users     *os.File
	log       *slog.Logger
}

// Start makes sure the cluster in opts.Dir exists and runs, creating it on first use.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("postgres directory: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create postgres directory: %w", err)
	}
	bin, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	s := &Server{
		dir:       dir,
		pgdata:    filepath.Join(dir, "pgdata"),
		socketDir: socketDir(dir),
		bin:       bin,
		log:       opts.Logger,
	}
	if os.Geteuid() == 0 {
		if s.cred, err = unprivileged(opts.RunAs); err != nil {
			return nil, err
		}
	}

	users, err := os.OpenFile(filepath.Join(dir, "users.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open postgres lock: %w", err)
	}
	s.users = users
	err = s.withStartLock(ctx, func() error {
		if err := s.ensureRunning(ctx, opts.Settings); err != nil {
			return err
		}
		return flock(ctx, users, syscall.LOCK_SH)
	})
	if err != nil {
		users.Close()
		return nil, err
	}
	return s, nil
}

// URL is a connection string for the given database of the cluster.
func (s *Server) URL(database string) string {
	return fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable", s.socketDir, port, superuser, database)
}

// Close releases this process's use of the cluster and stops the server if no other process
// still uses it.
func (s *Server) Close() error {
	defer s.users.Close()
	return s.withStartLock(context.Background(), func() error {
		if err := syscall.Flock(int(s.users.Fd()), syscall.LOCK_UN); err != nil {
			return fmt.Errorf("release postgres lock: %w", err)
		}
		if err := syscall.Flock(int(s.users.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			s.log.Info("postgres left running for its other users", "dir", s.dir)
			return nil
		}
		return s.stop()
	})
}

// withStartLock runs fn while holding the lock that serialises starting and stopping the
// cluster, so no process starts it while another is deciding to stop it.
func (s *Server) withStartLock(ctx context.Context, fn func() error) error {
	f, err := os.OpenFile(filepath.Join(s.dir, "start.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("open postgres lock: %w", err)
	}
	defer f.Close()
	if err := flock(ctx, f, syscall.LOCK_EX); err != nil {
		return err
	}
	return fn()
}

func (s *Server) ensureRunning(ctx context.Context, settings map[string]string) error {
	if _, err := os.Stat(filepath.Join(s.pgdata, "PG_VERSION")); errors.Is(err, os.ErrNotExist) {
		if err := s.initdb(ctx); err != nil {
			return err
		}
	} else if err != nil {
		return fmt.Errorf("inspect postgres data: %w", err)
	}
	if s.running() {
		return nil
	}
	if err := s.removeStalePID(); err != nil {
		return err
	}
	if err := s.prepareSocketDir(); err != nil {
		return err
	}
	args := []string{"start", "-w", "-t", "60", "-D", s.pgdata, "-l", filepath.Join(s.dir, "postgres.log"), "-s", "-o", s.serverOptions(settings)}
	started := time.Now()
	if out, err := s.command(ctx, "pg_ctl", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("start postgres: %v: %s (see %s)", err, bytes.TrimSpace(out), filepath.Join(s.dir, "postgres.log"))
	}
	s.log.Info("postgres started", "dir", s.pgdata, "socket", s.socketDir, "took", time.Since(started).Round(time.Millisecond))
	return s.ensureDatabase(ctx)
}

func (s *Server) serverOptions(settings map[string]string) string {
	opts := map[string]string{
		"listen_addresses":        "''",
		"unix_socket_directories": quoteOption(s.socketDir),
		"unix_socket_permissions": "0700",
		"port":                    strconv.Itoa(port),
	}
	for k, v := range settings {
		opts[k] = v
	}
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, " -c %s=%s", k, opts[k])
	}
	return strings.TrimSpace(b.String())
}

func quoteOption(v string) string { return "'" + strings.ReplaceAll(v, "'", `\'`) + "'" }

func (s *Server) initdb(ctx context.Context) error {
	if err := s.makeReachable(); err != nil {
		return err
	}
	tmp := s.pgdata + ".init"
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("clear half-made postgres data: %w", err)
	}
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return fmt.Errorf("create postgres data: %w", err)
	}
	if err := s.chown(tmp); err != nil {
		return err
	}
	started := time.Now()
	// Only the Unix socket is open, and its directory is private to the server's account.
	out, err := s.command(ctx, "initdb", "-D", tmp, "-U", superuser, "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-instructions").CombinedOutput()
	if err != nil {
		return fmt.Errorf("initdb: %v: %s", err, bytes.TrimSpace(out))
	}
	// Renamed only when complete, so a crash during initdb never leaves a cluster that looks whole.
	if err := os.Rename(tmp, s.pgdata); err != nil {
		return fmt.Errorf("install postgres data: %w", err)
	}
	s.log.Info("postgres cluster created", "dir", s.pgdata, "took", time.Since(started).Round(time.Millisecond))
	return nil
}

func (s *Server) ensureDatabase(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return fmt.Errorf("connect to postgres: %w", err)
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", DatabaseName).Scan(&exists); err != nil {
		return fmt.Errorf("look up database: %w", err)
	}
	if exists {
		return nil
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+DatabaseName); err != nil {
		return fmt.Errorf("create database: %w", err)
	}
	return nil
}

// running reports whether the postmaster named in the pid file is alive and serves this cluster.
func (s *Server) running() bool {
	pid, ok := s.pidFromFile()
	if !ok {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	return bytes.Contains(cmdline, []byte("postgres")) && s.serverDataDir(pid) == s.pgdata
}

// serverDataDir reads the data directory a postgres process serves from its working directory,
// which postgres sets to PGDATA.
func (s *Server) serverDataDir(pid int) string {
	cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	if err != nil {
		return ""
	}
	return cwd
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

func (s *Server) prepareSocketDir() error {
	if err := os.MkdirAll(s.socketDir, 0o700); err != nil {
		return fmt.Errorf("create postgres socket directory: %w", err)
	}
	return s.chown(s.socketDir)
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

func (s *Server) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(s.bin, name), args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8", "TZ=UTC")
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
			s.log.Info("making directory searchable so postgres can reach its data", "dir", d)
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

func unprivileged(name string) (*syscall.Credential, error) {
	candidates := []string{name}
	if name == "" {
		candidates = []string{"postgres", "nobody"}
	}
	for _, n := range candidates {
		u, err := user.Lookup(n)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, fmt.Errorf("postgres refuses to run as root and no unprivileged account (%s) exists: create one or run Nimbus as a normal user", strings.Join(candidates, ", "))
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
