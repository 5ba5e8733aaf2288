package backup_test

import (
	"context"
	"encoding/base64"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"nimbus/app/apptest"
	"nimbus/app/kernel/objstore"
	"nimbus/app/kernel/secrets"
	"nimbus/app/orchestration/backup"
	"nimbus/db"
	"nimbus/db/dbtest"
)

// noQueue queues nothing: no operation runs in these databases.
type noQueue struct{}

func (noQueue) InsertTx(context.Context, pgx.Tx, river.JobArgs, *river.InsertOpts) (*rivertype.JobInsertResult, error) {
	return &rivertype.JobInsertResult{}, nil
}

// installation is a database of the test's own with empty stores and a key.
func installation(t *testing.T, key byte) backup.Installation {
	t.Helper()
	url := dbtest.URL(t)
	in := backup.Installation{DatabaseURL: url, StateBackend: "file", Version: "test"}
	var err error
	in.Pool, err = db.Open(context.Background(), url, 4)
	apptest.Must(t, err)
	t.Cleanup(in.Pool.Close)
	objects, err := objstore.NewDir(filepath.Join(t.TempDir(), "objects"))
	apptest.Must(t, err)
	state, err := objstore.NewDir(filepath.Join(t.TempDir(), "state"))
	apptest.Must(t, err)
	in.Objects, in.State = objects, state
	text := base64.StdEncoding.EncodeToString([]byte(strings.Repeat(string(rune(key)), secrets.KeySize)))
	in.Keys, err = secrets.Load("", func(k string) string {
		if k == secrets.EnvKey {
			return text
		}
		return ""
	})
	apptest.Must(t, err)
	return in
}

// An archive of a Nimbus without a migration of this one is restored and brought up to this
// one's schema; a database that is not empty is refused, and left as it was.
func TestRestore_OlderArchiveIsMigratedAndATakenDatabaseRefused(t *testing.T) {
	ctx := context.Background()
	old := installation(t, 1)
	// The database as a version without this package's migration left it.
	_, err := old.Pool.Exec(ctx, `DROP TABLE backups; DELETE FROM schema_migrations WHERE version = 50;
		INSERT INTO tenants (name) VALUES ('kept')`)
	apptest.Must(t, err)
	var before int
	apptest.Must(t, old.Pool.QueryRow(ctx, "SELECT max(version) FROM schema_migrations").Scan(&before))
	archive := filepath.Join(t.TempDir(), "old.tar.gz")
	m, err := backup.Backup(ctx, old, archive)
	apptest.Must(t, err)
	if m.Migration != before {
		t.Fatalf("the archive says migration %d, want %d", m.Migration, before)
	}
	m, err = backup.Verify(archive)
	apptest.Must(t, err)

	taken := installation(t, 1)
	err = backup.Restore(ctx, taken, archive, m, noQueue{})
	if err == nil || !strings.Contains(err.Error(), "the database is not empty") {
		t.Fatalf("restoring onto a database in use: %v", err)
	}
	var tenants int
	apptest.Must(t, taken.Pool.QueryRow(ctx, "SELECT count(*) FROM tenants WHERE name = 'kept'").Scan(&tenants))
	if tenants != 0 {
		t.Fatal("the refused restore wrote to the database")
	}

	fresh := installation(t, 1)
	_, err = fresh.Pool.Exec(ctx, "DROP SCHEMA public CASCADE; CREATE SCHEMA public")
	apptest.Must(t, err)
	apptest.Must(t, backup.Restore(ctx, fresh, archive, m, noQueue{}))
	var migrated bool
	apptest.Must(t, fresh.Pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = 50)").Scan(&migrated))
	apptest.Must(t, fresh.Pool.QueryRow(ctx, "SELECT count(*) FROM tenants WHERE name = 'kept'").Scan(&tenants))
	var backups bool
	apptest.Must(t, fresh.Pool.QueryRow(ctx, "SELECT to_regclass('backups') IS NOT NULL").Scan(&backups))
	if !migrated || !backups || tenants != 1 {
		t.Fatalf("after the restore: migration 50 applied %v, backups table %v, %d tenants kept; want true, true, 1", migrated, backups, tenants)
	}
}
