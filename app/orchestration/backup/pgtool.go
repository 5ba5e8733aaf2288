package backup

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"nimbus/db/localpg"
)

// dump writes the database as the exported snapshot sees it to path, in pg_dump's custom
// format.
func dump(ctx context.Context, url, snapshot, path string) error {
	return pgTool(ctx, url, "pg_dump", "--format=custom", "--snapshot="+snapshot, "--file="+path)
}

// restore loads a dump into the (empty) database at url, all of it or nothing.
func restore(ctx context.Context, url, path string) error {
	cfg, err := pgconn.ParseConfig(url)
	if err != nil {
		return fmt.Errorf("database URL: %w", err)
	}
	// Owners and grants are the old installation's roles, which need not exist here.
	return pgTool(ctx, url, "pg_restore", "--no-owner", "--no-acl", "--exit-on-error", "--single-transaction",
		"--dbname="+cfg.Database, path)
}

// pgTool runs one of PostgreSQL's client programs on the database at url. What says where the
// database is goes in PG* variables, and the password in a password file of mode 0600 that
// PGPASSFILE names: never on the command line, which every user of the machine can read.
func pgTool(ctx context.Context, url, name string, args ...string) error {
	cfg, err := pgconn.ParseConfig(url)
	if err != nil {
		return fmt.Errorf("database URL: %w", err)
	}
	bin, err := findTool(name)
	if err != nil {
		return err
	}
	pass, err := os.CreateTemp("", "nimbus-pgpass-")
	if err != nil {
		return err
	}
	defer os.Remove(pass.Name())
	// Every host, port, database and user: the variables below say which.
	_, werr := pass.WriteString("*:*:*:*:" + strings.NewReplacer(`\`, `\\`, `:`, `\:`).Replace(cfg.Password) + "\n")
	if err := pass.Close(); werr != nil || err != nil {
		return fmt.Errorf("write the password file for %s: %v %v", name, werr, err)
	}
	cmd := exec.CommandContext(ctx, bin, append([]string{"--no-password"}, args...)...)
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C.UTF-8", "TZ=UTC",
		"PGHOST=" + cfg.Host, "PGPORT=" + strconv.Itoa(int(cfg.Port)), "PGUSER=" + cfg.User, "PGDATABASE=" + cfg.Database,
		"PGPASSFILE=" + pass.Name(), "PGSSLMODE=" + sslMode(cfg)}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %v: %s", name, err, bytes.TrimSpace(out.Bytes()))
	}
	return nil
}

// sslMode is the libpq sslmode that makes the connection pgx's configuration describes.
func sslMode(cfg *pgconn.Config) string {
	switch {
	case cfg.TLSConfig == nil:
		return "disable"
	case len(cfg.Fallbacks) > 0 && cfg.Fallbacks[len(cfg.Fallbacks)-1].TLSConfig == nil:
		return "prefer"
	case cfg.TLSConfig.InsecureSkipVerify:
		return "require"
	}
	return "verify-full"
}

// findTool finds a client program beside the server binaries the embedded database runs
// (the same version), else on PATH.
func findTool(name string) (string, error) {
	if dir, err := localpg.FindBinaries(); err == nil {
		if p := filepath.Join(dir, name); isFile(p) {
			return p, nil
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s is not installed: install the PostgreSQL client programs (Debian: apt-get install postgresql-client)", name)
	}
	return p, nil
}

func isFile(p string) bool {
	info, err := os.Stat(p)
	return err == nil && info.Mode().IsRegular()
}
