package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"nimbus/app/kernel/objstore"
	"nimbus/app/kernel/secrets"
	"nimbus/app/orchestration/backup"
	"nimbus/db/localpg"
	"nimbus/jobs"
)

// storeOptions are the options that say where the installation's parts are.
var storeOptions = []string{"data-dir", "database-url", "log-format", "log-level",
	"s3-endpoint", "s3-bucket", "s3-access-key", "s3-secret-key-file", "s3-region"}

func backupCmd(ctx context.Context, args []string, env Env) error {
	fs := flagSet("backup --to FILE", "Write the whole installation into one archive (gzipped tar): a snapshot of the database,\n"+
		"every stack's state, the object store's logs and state backups, and a manifest with checksums.\n"+
		"It may run beside a serving Nimbus: operations already running go on, and new ones wait while\n"+
		"the states are copied. The master key is not in the archive: keep it apart (its id is).", env)
	to := fs.String("to", "", "the archive to write (required)")
	cfg, err := parseConfig(fs, args, env.Getenv, storeOptions...)
	if err != nil {
		return err
	}
	if *to == "" {
		return errors.New("--to is required: the file to write the backup to")
	}
	keys, err := configuredKeys(cfg, env.Getenv)
	if err != nil {
		return err
	}
	in, done, err := openInstallation(ctx, cfg, env, keys)
	if err != nil {
		return err
	}
	defer done()
	m, err := backup.Backup(ctx, in, *to)
	if err != nil {
		return err
	}
	info, err := os.Stat(*to)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "backup written to %s: %d entries, %d bytes; restoring it needs the master key %s\n", *to, len(m.Entries), info.Size(), m.KeyID)
	return nil
}

func restoreCmd(ctx context.Context, args []string, env Env) error {
	fs := flagSet("restore --from FILE", "Restore an archive of \"nimbus backup\" onto an empty installation: an empty data directory\n"+
		"(or an empty database and bucket), with the master key the archive names. Newer migrations\n"+
		"are applied after it; operations that were running at backup time go on when Nimbus starts.\n"+
		"A damaged archive, a wrong key or a target that is not empty is refused, and nothing changes.", env)
	from := fs.String("from", "", "the archive to restore (required)")
	cfg, err := parseConfig(fs, args, env.Getenv, storeOptions...)
	if err != nil {
		return err
	}
	if *from == "" {
		return errors.New("--from is required: the backup archive to restore")
	}
	fmt.Fprintf(env.Stdout, "checking %s\n", *from)
	m, err := backup.Verify(*from)
	if err != nil {
		return err
	}
	keys, err := configuredKeys(cfg, env.Getenv)
	if err != nil {
		return err
	}
	if err := m.CheckKey(keys); err != nil {
		return err
	}
	// Each refusal comes before anything is written: an external database, which opening does
	// not change, is found empty first; the stores (made in the data directory, or a bucket)
	// are opened once the kinds agree, and the embedded database (made in an empty data
	// directory) once the stores are found empty.
	backend := "file"
	if cfg.S3.Endpoint != "" {
		backend = "s3"
	}
	if err := m.CheckBackend(backend); err != nil {
		return err
	}
	if cfg.DatabaseURL != "" {
		probe, done, err := openDatabaseOf(ctx, cfg, env, backup.Installation{})
		if err != nil {
			return err
		}
		err = probe.CheckDatabaseEmpty(ctx)
		done()
		if err != nil {
			return err
		}
	} else if err := emptyDataDir(cfg.DataDir); err != nil {
		return err
	}
	in, err := openStores(ctx, cfg, env, keys)
	if err != nil {
		return err
	}
	if err := in.CheckStoresEmpty(ctx); err != nil {
		return err
	}
	in, done, err := openDatabaseOf(ctx, cfg, env, in)
	if err != nil {
		return err
	}
	defer done()
	// Insert only: the operations it queues are run by the next "nimbus serve".
	client, err := river.NewClient(riverpgxv5.New(in.Pool), &river.Config{})
	if err != nil {
		return err
	}
	if err := backup.Restore(ctx, in, *from, m, jobs.NewInserter(client)); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "restored %s (Nimbus %s, taken %s)\n", *from, m.Nimbus, m.TakenAt.Format("2006-01-02 15:04:05 MST"))
	return nil
}

// configuredKeys loads the master key without making one: a backup names the key its secrets
// are sealed with, and a restore needs that key, so a key generated now would be wrong in both.
func configuredKeys(cfg *config, getenv func(string) string) (*secrets.Keyring, error) {
	if strings.TrimSpace(getenv(secrets.EnvKey)) == "" {
		file := filepath.Join(cfg.DataDir, secrets.KeyFileName)
		if _, err := os.Stat(file); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("no master key: set %s, or put the key file at %s", secrets.EnvKey, file)
		}
	}
	return secrets.Load(cfg.DataDir, getenv)
}

// emptyDataDir refuses a data directory that holds anything but the master key's file.
func emptyDataDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var held []string
	for _, e := range entries {
		if e.Name() != secrets.KeyFileName {
			held = append(held, e.Name())
		}
	}
	if len(held) > 0 {
		return fmt.Errorf("the data directory %s is not empty (it holds %s): restore onto an empty one, which may hold the key file %s alone",
			dir, strings.Join(held, ", "), secrets.KeyFileName)
	}
	return nil
}

// openInstallation opens the stores and the database of the installation cfg describes.
func openInstallation(ctx context.Context, cfg *config, env Env, keys *secrets.Keyring) (backup.Installation, func(), error) {
	in, err := openStores(ctx, cfg, env, keys)
	if err != nil {
		return in, nil, err
	}
	return openDatabaseOf(ctx, cfg, env, in)
}

// openStores opens the object store and the states of the installation cfg describes, and not
// yet its database.
func openStores(ctx context.Context, cfg *config, env Env, keys *secrets.Keyring) (backup.Installation, error) {
	objs, err := openObjects(ctx, cfg, cfg.logger(env.Stderr))
	if err != nil {
		return backup.Installation{}, err
	}
	in, err := stores(cfg, objs, keys)
	in.Progress = env.Stdout
	return in, err
}

// openDatabaseOf opens the database of the installation cfg describes into in, whose stores
// are open; done closes it.
func openDatabaseOf(ctx context.Context, cfg *config, env Env, in backup.Installation) (backup.Installation, func(), error) {
	log := cfg.logger(env.Stderr)
	d, err := openDatabase(ctx, cfg, log, 4)
	if err != nil {
		return in, nil, err
	}
	done := func() {
		if err := d.Close(); err != nil {
			log.Error("stop database", "err", err)
		}
	}
	return withDatabase(in, cfg, d), done, nil
}

// installation is what a backup is taken of: the open database and stores.
func installation(cfg *config, d *database, objs *objects, keys *secrets.Keyring) (backup.Installation, error) {
	in, err := stores(cfg, objs, keys)
	return withDatabase(in, cfg, d), err
}

// stores is an installation's object store and states, without its database.
func stores(cfg *config, objs *objects, keys *secrets.Keyring) (backup.Installation, error) {
	in := backup.Installation{Keys: keys, Version: Version, Objects: objs.store.(backup.Blobs), StateBackend: "file"}
	if s3, ok := objs.store.(*objstore.S3); ok {
		in.State, in.StateBackend = s3, "s3"
		return in, nil
	}
	state, err := objstore.NewDir(filepath.Join(cfg.DataDir, "state"))
	in.State = state
	return in, err
}

// withDatabase is in with the open database d.
func withDatabase(in backup.Installation, cfg *config, d *database) backup.Installation {
	in.Pool, in.DatabaseURL = d.Pool, cfg.DatabaseURL
	if d.embedded != nil {
		in.DatabaseURL = d.embedded.URL(localpg.DatabaseName)
	}
	return in
}

// backupShelf is where scheduled backups go, and how the system page says so.
func backupShelf(cfg *config, objs *objects) (backup.Shelf, string, error) {
	shelf := backup.ObjectShelf(objs.store.(backup.Keeper), cfg.BackupKeep)
	where := objs.where + ", under backups/"
	if cfg.BackupDir != "" {
		dir, err := objstore.NewDir(cfg.BackupDir)
		if err != nil {
			return shelf, "", fmt.Errorf("--backup-dir / NIMBUS_BACKUP_DIR: %w", err)
		}
		shelf, where = backup.Shelf{Store: dir, Keep: cfg.BackupKeep}, dir.Root()
	}
	if cfg.BackupInterval == 0 {
		return shelf, "", nil
	}
	return shelf, fmt.Sprintf("every %s, the newest %d kept in %s", cfg.BackupInterval, cfg.BackupKeep, where), nil
}
