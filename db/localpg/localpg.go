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
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
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
	// Settings are extra server settings (name → value), written to PGDATA/postgresql.nimbus.conf
	// at every start; they override the defaults this package sets (listen only on the socket).
	Settings map[string]string
	// RunAs is the unprivileged account to run the server as when Nimbus runs as root.
	// Empty means "postgres". A shared account such as nobody is refused: see unprivileged.
	RunAs string
}

// Server is a running cluster this process uses. Close releases it and stops the server when
// no other process uses it.
type Server struct {
	dir       string
	pgdata    string
	socketDir string
	bin       string
	cred      *syscall.Credential // set when Nimbus runs as root: the account the server runs as
	account   string              // that account's name, for messages
	users     *os.File
	log       *slog.Logger
	settings  map[string]string // Options.Settings, for a restart
	password  string            // the superuser's (see password.go)
	// resetPassword says the password was made for a cluster that exists already, so it must
	// be set in the cluster before its server starts.
	resetPassword bool
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
		settings:  opts.Settings,
	}
	if os.Geteuid() == 0 {
		if s.cred, s.account, err = unprivileged(opts.RunAs); err != nil {
			return nil, err
		}
	}

	users, err := os.OpenFile(filepath.Join(dir, "users.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open postgres lock: %w", err)
	}
	s.users = users
	err = s.withStartLock(ctx, func() error {
		if err := s.loadPassword(); err != nil {
			return err
		}
		if err := s.ensureRunning(ctx, s.settings); err != nil {
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

// URL is a connection string for the given database of the cluster. It holds the cluster's
// password: hand it to a pool, never to a log, a command line or an error message.
//
// It requires scram-sha-256: a client then never sends the password, or anything that stands
// for it, to whatever answers on the socket, and refuses a server that asks for none.
func (s *Server) URL(database string) string {
	return fmt.Sprintf("host=%s port=%d user=%s password=%s dbname=%s sslmode=disable require_auth=scram-sha-256",
		connValue(s.socketDir), port, superuser, connValue(s.password), connValue(database))
}

// connValue quotes a keyword/value connection string value when it needs it: the socket
// directory follows the data directory, whose path may hold spaces, quotes or backslashes.
func connValue(v string) string {
	if v != "" && !strings.ContainsAny(v, " \t\n\r\v\f'\\") {
		return v
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
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
	if err := s.writeSettings(settings); err != nil {
		return err
	}
	if err := s.closeTrust(ctx); err != nil {
		return err
	}
	// Settings go through a file, never pg_ctl -o: pg_ctl pastes its options into a /bin/sh
	// command line. It pastes -D and -l there too, inside double quotes where $, ` and \ still
	// act, so they are given relative to the command's working directory (s.dir) and the data
	// directory's own path never reaches the shell.
	args := []string{"start", "-w", "-t", strconv.Itoa(int(maxStart.Seconds())), "-D", filepath.Base(s.pgdata), "-l", "postgres.log", "-s"}
	started := time.Now()
	if out, err := s.command(ctx, "pg_ctl", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("start postgres: %v: %s (see %s)", err, bytes.TrimSpace(out), filepath.Join(s.dir, "postgres.log"))
	}
	s.log.Info("postgres started", "dir", s.pgdata, "socket", s.socketDir, "took", time.Since(started).Round(time.Millisecond))
	return s.ensureDatabase(ctx)
}

// settingsFile holds the server's settings inside PGDATA; postgresql.conf includes it.
const settingsFile = "postgresql.nimbus.conf"

// includeSettings is the line that makes postgresql.conf read settingsFile. A relative include
// is resolved against postgresql.conf's directory. It is a plain include, not include_if_exists:
// without the file the server would listen on localhost TCP and put its socket in a shared
// directory, so a missing file must stop it from starting.
const includeSettings = "include = '" + settingsFile + "'"

// settingName is what a setting's name may look like (custom settings have a dotted prefix);
// anything else could break out of its line in the settings file.
var settingName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$`)

// writeSettings writes the server's settings to settingsFile, replacing what an earlier start
// wrote, and makes sure postgresql.conf includes it.
func (s *Server) writeSettings(settings map[string]string) error {
	conf, err := settingsConf(s.socketDir, settings)
	if err != nil {
		return err
	}
	path := filepath.Join(s.pgdata, settingsFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(conf), 0o600); err != nil {
		return fmt.Errorf("write postgres settings: %w", err)
	}
	if err := s.chown(tmp); err != nil {
		return err
	}
	// Renamed into place so a crash never leaves a half-written file for the next start.
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write postgres settings: %w", err)
	}

	main := filepath.Join(s.pgdata, "postgresql.conf")
	data, err := os.ReadFile(main)
	if err != nil {
		return fmt.Errorf("read postgresql.conf: %w", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == includeSettings {
			return nil
		}
	}
	// Appended, so it comes after (and overrides) everything initdb wrote.
	f, err := os.OpenFile(main, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("update postgresql.conf: %w", err)
	}
	_, werr := fmt.Fprintf(f, "\n# Nimbus rewrites %s at every start: the socket and its Settings.\n%s\n", settingsFile, includeSettings)
	if err := errors.Join(werr, f.Close()); err != nil {
		return fmt.Errorf("update postgresql.conf: %w", err)
	}
	return nil
}

// reserved are settings the caller may not give: they would make the server read who may
// connect from a file other than the pg_hba.conf Nimbus writes at every start.
var reserved = map[string]bool{"hba_file": true, "ident_file": true, "config_file": true, "data_directory": true}

// settingsConf renders the server's settings in postgresql.conf syntax: the defaults that keep
// it on the private socket, overridden by the caller's settings.
func settingsConf(socketDir string, settings map[string]string) (string, error) {
	opts := map[string]string{
		"listen_addresses": "",
		// A list of directories: quoted so a comma or space in the path stays part of it.
		"unix_socket_directories": `"` + strings.ReplaceAll(socketDir, `"`, `""`) + `"`,
		"unix_socket_permissions": "0700",
		"port":                    strconv.Itoa(port),
	}
	for k, v := range settings {
		if !settingName.MatchString(k) {
			return "", fmt.Errorf("postgres setting %q: not a valid setting name", k)
		}
		if reserved[strings.ToLower(k)] {
			return "", fmt.Errorf("postgres setting %s: Nimbus decides it, so that no connection is trusted", k)
		}
		if strings.ContainsRune(v, 0) {
			return "", fmt.Errorf("postgres setting %s: value holds a NUL byte", k)
		}
		opts[k] = v
	}
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by Nimbus at every start of this cluster; changes here are lost.\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s = %s\n", k, confQuote(opts[k]))
	}
	return b.String(), nil
}

// confQuote quotes a value for postgresql.conf. Every value may be quoted, whatever its type.
// Inside quotes a quote is doubled and a backslash starts an escape, so backslashes are doubled
// too; line breaks are escaped because a quoted value may not span lines.
func confQuote(v string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `''`, "\n", `\n`, "\r", `\r`).Replace(v) + "'"
}

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
	// Only the Unix socket is open, its directory is private to the server's account, and it
	// asks every connection for the password (see password.go).
	// The data directory is relative to the command's working directory (s.dir), as for pg_ctl
	// start, so its path never reaches a shell command line.
	pw, err := s.pwfile()
	if err != nil {
		return fmt.Errorf("initdb: %w", err)
	}
	out, err := s.command(ctx, "initdb", "-D", filepath.Base(tmp), "-U", superuser, "--auth=scram-sha-256", "--pwfile="+filepath.Base(pw),
		"-E", "UTF8", "--locale=C.UTF-8", "--no-instructions").CombinedOutput()
	os.Remove(pw)
	if err != nil {
		return fmt.Errorf("initdb: %v: %s", err, bytes.TrimSpace(out))
	}
	// Nimbus's own pg_hba.conf, so that the first start need not set the password again.
	if err := os.WriteFile(filepath.Join(tmp, "pg_hba.conf"), []byte(hbaConf), 0o600); err != nil {
		return fmt.Errorf("write pg_hba.conf: %w", err)
	}
	if err := s.chown(filepath.Join(tmp, "pg_hba.conf")); err != nil {
		return err
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
