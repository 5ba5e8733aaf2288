// Package cli is the nimbus command: serve, migrate, user create, token create, seed, backup,
// restore and version.
package cli

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/app/domain/auth"
	"nimbus/app/domain/user"
	"nimbus/db"
	"nimbus/db/localpg"
)

// Version is the build's version, set at link time by the Taskfile.
var Version = "dev"

const usage = `Nimbus is a self-hosted infrastructure automation portal.

Usage:
  nimbus serve [flags]                      run the web server and job workers
  nimbus migrate [up|status] [flags]        apply or list database migrations
  nimbus user create --email E [flags]      create a user (password read from stdin, or generated)
  nimbus token create --email E --name N    create an API token for a user and print it
  nimbus seed [flags]                       fill an empty database with made-up data at scale
  nimbus backup --to FILE                   write the database, the stacks' states and the logs into one archive
  nimbus restore --from FILE                restore such an archive onto an empty data directory or database
  nimbus version                            print the version

Every command takes --data-dir (NIMBUS_DATA_DIR) and --database-url (NIMBUS_DATABASE_URL).
Without a database URL Nimbus runs its own PostgreSQL in the data directory, starting it if no
other nimbus process already has. Run "nimbus <command> --help" for a command's flags.
`

// Env is what a command sees of its surroundings, so tests can run it in-process.
type Env struct {
	Getenv func(string) string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// Run runs the nimbus command line; ctx is cancelled on SIGINT or SIGTERM.
func Run(ctx context.Context, args []string, env Env) error {
	if len(args) < 2 {
		fmt.Fprint(env.Stderr, usage)
		return errors.New("no command given")
	}
	cmd, rest := args[1], args[2:]
	switch cmd {
	case "serve":
		return serve(ctx, rest, env)
	case "migrate":
		return migrate(ctx, rest, env)
	case "user":
		if len(rest) > 0 && rest[0] == "create" {
			return userCreate(ctx, rest[1:], env)
		}
		return errors.New(`unknown user command; did you mean "nimbus user create"?`)
	case "token":
		if len(rest) > 0 && rest[0] == "create" {
			return tokenCreate(ctx, rest[1:], env)
		}
		return errors.New(`unknown token command; did you mean "nimbus token create"?`)
	case "seed":
		return seedData(ctx, rest, env)
	case "backup":
		return backupCmd(ctx, rest, env)
	case "restore":
		return restoreCmd(ctx, rest, env)
	case "version", "--version", "-v":
		fmt.Fprintln(env.Stdout, "nimbus", Version)
		return nil
	case "help", "--help", "-h":
		fmt.Fprint(env.Stdout, usage, envHelp())
		return nil
	}
	fmt.Fprint(env.Stderr, usage)
	return fmt.Errorf("unknown command %q", cmd)
}

func flagSet(name, summary string, env Env) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.Usage = func() {
		fmt.Fprintf(env.Stderr, "Usage: nimbus %s\n\n%s\n\nFlags:\n", name, summary)
		fs.PrintDefaults()
	}
	return fs
}

// database is an open pool on Nimbus's database, and the embedded server if one is in use.
type database struct {
	Pool     *pgxpool.Pool
	embedded *localpg.Server
	Where    string
}

func (d *database) Close() error {
	d.Pool.Close()
	if d.embedded != nil {
		return d.embedded.Close()
	}
	return nil
}

// openDatabase connects to NIMBUS_DATABASE_URL, or to the embedded cluster in the data
// directory, starting it if no other process runs it.
func openDatabase(ctx context.Context, cfg *config, log *slog.Logger, maxConns int32) (*database, error) {
	if cfg.DatabaseURL != "" {
		pool, err := db.Open(ctx, cfg.DatabaseURL, maxConns)
		if err != nil {
			return nil, err
		}
		return &database{Pool: pool, Where: "external"}, nil
	}
	if err := ensureDir(cfg.DataDir); err != nil {
		return nil, err
	}
	pgDir := filepath.Join(cfg.DataDir, "postgres")
	srv, err := localpg.Start(ctx, localpg.Options{Dir: pgDir, Logger: log})
	if err != nil {
		return nil, err
	}
	pool, err := db.Open(ctx, srv.URL(localpg.DatabaseName), maxConns)
	if err != nil {
		srv.Close()
		return nil, err
	}
	return &database{Pool: pool, embedded: srv, Where: "embedded in " + pgDir}, nil
}

func migrate(ctx context.Context, args []string, env Env) error {
	sub := "up"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	if sub != "up" && sub != "status" {
		return fmt.Errorf("unknown migrate command %q: use up or status", sub)
	}
	fs := flagSet("migrate [up|status]", "Apply pending migrations (up, the default) or list them with their state (status).", env)
	cfg, err := parseConfig(fs, args, env.Getenv, "data-dir", "database-url", "log-format", "log-level")
	if err != nil {
		return err
	}
	log := cfg.logger(env.Stderr)
	d, err := openDatabase(ctx, cfg, log, 2)
	if err != nil {
		return err
	}
	defer d.Close()
	if sub == "up" {
		if err := db.Migrate(ctx, d.Pool, log); err != nil {
			return err
		}
		fmt.Fprintln(env.Stdout, "database is up to date")
		return nil
	}
	ours, river, err := db.MigrationStatus(ctx, d.Pool)
	if err != nil {
		return err
	}
	for _, group := range []struct {
		name string
		list []db.Migration
	}{{"nimbus", ours}, {"river", river}} {
		for _, m := range group.list {
			state := "pending"
			if m.Applied {
				state = "applied"
				if !m.AppliedAt.IsZero() {
					state += " " + m.AppliedAt.UTC().Format(time.RFC3339)
				}
			}
			fmt.Fprintf(env.Stdout, "%-7s %04d  %-40s %s\n", group.name, m.Version, m.Name, state)
		}
	}
	return nil
}

func userCreate(ctx context.Context, args []string, env Env) error {
	fs := flagSet("user create --email E [--provider-admin]",
		"Create a user. The password is read from the first line of stdin when stdin is not a terminal,\n"+
			"or from NIMBUS_USER_PASSWORD; otherwise one is generated and printed. It never goes on the command line.", env)
	email := fs.String("email", "", "the user's email (required)")
	admin := fs.Bool("provider-admin", false, "make the user a provider admin")
	cfg, err := parseConfig(fs, args, env.Getenv, "data-dir", "database-url", "log-format", "log-level")
	if err != nil {
		return err
	}
	if *email == "" {
		return errors.New("--email is required")
	}
	password, generated, err := readPassword(env)
	if err != nil {
		return err
	}
	d, err := openDatabase(ctx, cfg, cfg.logger(env.Stderr), 2)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := db.Migrate(ctx, d.Pool, cfg.logger(io.Discard)); err != nil {
		return err
	}
	u, err := user.CreateBySystem(ctx, d.Pool, user.NewUser{Email: *email, Password: password, ProviderAdmin: *admin})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "created user %s (%s)\n", u.Email, u.ID)
	if generated {
		fmt.Fprintf(env.Stdout, "password: %s\n", password)
	}
	return nil
}

// readPassword takes a password from NIMBUS_USER_PASSWORD or piped stdin, or generates one.
func readPassword(env Env) (password string, generated bool, err error) {
	if p := env.Getenv("NIMBUS_USER_PASSWORD"); p != "" {
		return p, false, nil
	}
	if env.Stdin != nil && !isTerminal(env.Stdin) {
		line, err := bufio.NewReader(env.Stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", false, fmt.Errorf("read password from stdin: %w", err)
		}
		if line = strings.TrimRight(line, "\r\n"); line != "" {
			return line, false, nil
		}
	}
	return generatePassword(), true, nil
}

func tokenCreate(ctx context.Context, args []string, env Env) error {
	fs := flagSet("token create --email E --name N [--expires-in-days D] [--scope S [--tenant T]]", "Create an API token acting as the user and print it; it is shown only once.", env)
	email := fs.String("email", "", "the user the token acts as (required)")
	name := fs.String("name", "", "what the token is for (required)")
	days := fs.Int("expires-in-days", 90, "days until the token expires, 1 to 365")
	scope := fs.String("scope", "full", "full, read_only, or tenant (with --tenant)")
	tenant := fs.String("tenant", "", "the ID of the one tenant a tenant-scoped token acts in")
	cfg, err := parseConfig(fs, args, env.Getenv, "data-dir", "database-url", "log-format", "log-level")
	if err != nil {
		return err
	}
	if *email == "" || *name == "" {
		return errors.New("--email and --name are required")
	}
	expires, err := auth.ExpiresIn("expires-in-days", *days)
	if err != nil {
		return err
	}
	spec := auth.TokenSpec{Name: *name, ExpiresAt: expires, Scope: auth.Scope(*scope)}
	if *tenant != "" {
		if spec.Tenant, err = uuid.Parse(*tenant); err != nil {
			return fmt.Errorf("--tenant: %w", err)
		}
	}
	d, err := openDatabase(ctx, cfg, cfg.logger(env.Stderr), 2)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := db.Migrate(ctx, d.Pool, cfg.logger(io.Discard)); err != nil {
		return err
	}
	svc := auth.NewService(d.Pool, cfg.logger(env.Stderr), cfg.SessionTTL)
	tok, err := svc.IssueToken(ctx, *email, spec)
	if err != nil {
		return err
	}
	fmt.Fprintln(env.Stdout, tok.Secret)
	return nil
}

const passwordAlphabet = "abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"

func generatePassword() string {
	b := make([]byte, 20)
	for i := range b {
		n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(passwordAlphabet))))
		b[i] = passwordAlphabet[n.Int64()]
	}
	return string(b)
}
