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
	if cfg.DatabaseURL == "" {
		if err := emptyDataDir(cfg.DataDir); err != nil {
			return err
		}
	}
	in, done, err := openInstallation(ctx, cfg, env, keys)
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

// openInstallation opens the database and the stores of the installation cfg describes.
func openInstallation(ctx context.Context, cfg *config, env Env, keys *secrets.Keyring) (backup.Installation, func(), error) {
	log := cfg.logger(env.Stderr)
	objs, err := openObjects(ctx, cfg, log)
	if err != nil {
		return backup.Installation{}, nil, err
	}
	d, err := openDatabase(ctx, cfg, log, 4)
	if err != nil {
		return backup.Installation{}, nil, err
	}
	done := func() {
		if err := d.Close(); err != nil {
			log.Error("stop database", "err", err)
		}
	}
	in, err := installation(cfg, d, objs, keys)
	if err != nil {
		done()
		return in, nil, err
	}
	in.Progress = env.Stdout
	return in, done, nil
}

// installation is what a backup is taken of: the open database and stores.
func installation(cfg *config, d *database, objs *objects, keys *secrets.Keyring) (backup.Installation, error) {
	in := backup.Installation{Pool: d.Pool, DatabaseURL: cfg.DatabaseURL, Keys: keys, Version: Version,
		Objects: objs.store.(backup.Blobs), StateBackend: "file"}
	if d.embedded != nil {
		in.DatabaseURL = d.embedded.URL(localpg.DatabaseName)
	}
	if s3, ok := objs.store.(*objstore.S3); ok {
		in.State, in.StateBackend = s3, "s3"
		return in, nil
	}
	state, err := objstore.NewDir(filepath.Join(cfg.DataDir, "state"))
	in.State = state
	return in, err
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
