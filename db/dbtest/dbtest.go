// Package dbtest gives each test its own database, cloned from a migrated template in a
// Postgres cluster started by the same launcher the server uses. The cluster is shared by all
// test binaries of a run (NIMBUS_TEST_DATABASE_URL points at another server instead).
package dbtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/db"
	"nimbus/db/localpg"
	"nimbus/migrations"
)

var (
	once     sync.Once
	server   *localpg.Server
	adminURL string
	template string
	setupErr error
)

// Main runs a package's tests and then releases the shared cluster; call it from TestMain with
// the package's *testing.M, or with something that runs it (s3test.Around, say).
func Main(m interface{ Run() int }) {
	code := m.Run()
	if server != nil {
		if err := server.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "dbtest:", err)
		}
	}
	os.Exit(code)
}

// URL returns a connection string for a new, migrated database that is dropped when t ends.
func URL(t testing.TB) string {
	t.Helper()
	once.Do(func() { setupErr = setup() })
	if setupErr != nil {
		t.Fatalf("test database: %v", setupErr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := "test_" + randomHex(8)
	admin, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		t.Fatalf("test database: %v", err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s", name, template)); err != nil {
		t.Fatalf("clone test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		admin, err := pgx.Connect(ctx, adminURL)
		if err != nil {
			t.Errorf("drop test database: %v", err)
			return
		}
		defer admin.Close(ctx)
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop test database: %v", err)
		}
	})
	return withDatabase(adminURL, name)
}

// Pool returns a pool on a new, migrated database, closed and dropped when t ends.
func Pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool, err := db.Open(context.Background(), URL(t), 8)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func setup() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adminURL = os.Getenv("NIMBUS_TEST_DATABASE_URL")
	if adminURL == "" {
		dir := filepath.Join(os.TempDir(), fmt.Sprintf("nimbus-test-pg-%d", os.Getuid()))
		var err error
		server, err = localpg.Start(ctx, localpg.Options{
			Dir: dir,
			// Test data is thrown away: trade durability for speed.
			Settings: map[string]string{"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off", "max_connections": "300"},
		})
		if err != nil {
			return err
		}
		adminURL = server.URL("postgres")
	}
	sum, err := migrationsHash()
	if err != nil {
		return err
	}
	template = "nimbus_template_" + sum
	return ensureTemplate(ctx)
}

// ensureTemplate builds the migrated template once per schema version; test binaries running
// in parallel serialise on an advisory lock so only one builds it.
func ensureTemplate(ctx context.Context) error {
	admin, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return err
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock(4242)"); err != nil {
		return err
	}
	defer admin.Exec(context.Background(), "SELECT pg_advisory_unlock(4242)") //nolint:errcheck // released with the connection anyway
	var exists bool
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", template).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	building := template + "_building"
	if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+building+" WITH (FORCE)"); err != nil {
		return err
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+building); err != nil {
		return err
	}
	pool, err := db.Open(ctx, withDatabase(adminURL, building), 2)
	if err != nil {
		return err
	}
	err = db.Migrate(ctx, pool, slog.New(slog.NewTextHandler(io.Discard, nil)))
	pool.Close()
	if err != nil {
		return err
	}
	_, err = admin.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s RENAME TO %s", building, template))
	return err
}

func migrationsHash() (string, error) {
	h := sha256.New()
	err := fs.WalkDir(migrations.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(migrations.FS, path)
		h.Write([]byte(path))
		h.Write(data)
		return err
	})
	// River's migrations change with its version, which the module build info pins.
	h.Write([]byte(riverVersion()))
	return hex.EncodeToString(h.Sum(nil))[:12], err
}

// withDatabase points a connection string, URL or keyword form, at another database.
func withDatabase(conn, name string) string {
	u, err := url.Parse(conn)
	if err != nil || u.Scheme == "" {
		// In the keyword form a later setting wins.
		return conn + " dbname=" + name
	}
	u.Path = "/" + name
	return u.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
