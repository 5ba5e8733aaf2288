package backup

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"nimbus/app/kernel/secrets"
	"nimbus/app/orchestration/deploy"
	"nimbus/db"
	"nimbus/jobs"
)

// Verify reads the archive at path through and checks every entry against its manifest: each
// one listed, of its size and SHA-256, and nothing else. It changes nothing.
func Verify(path string) (Manifest, error) {
	var (
		m     Manifest
		found = map[string]Entry{}
		seen  bool
	)
	err := walk(path, func(name string, r io.Reader) error {
		if name == manifestEntry {
			seen = true
			return json.NewDecoder(r).Decode(&m)
		}
		h := sha256.New()
		n, err := io.Copy(h, r)
		found[name] = Entry{Name: name, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}
		return err
	})
	damaged := func(why string, args ...any) error {
		return fmt.Errorf("the archive %s is damaged or not a Nimbus backup: %s", path, fmt.Sprintf(why, args...))
	}
	switch {
	case err != nil:
		return m, damaged("%v", err)
	case !seen:
		return m, damaged("it has no %s", manifestEntry)
	case m.Format != Format:
		return m, damaged("its format is %d; this Nimbus reads format %d", m.Format, Format)
	}
	for _, e := range m.Entries {
		got, ok := found[e.Name]
		switch {
		case !ok:
			return m, damaged("%s is missing", e.Name)
		case got.Size != e.Size || got.SHA256 != e.SHA256:
			return m, damaged("%s does not match its checksum in the manifest", e.Name)
		}
		delete(found, e.Name)
	}
	if len(found) > 0 {
		return m, damaged("%s is not in the manifest", slices.Sorted(maps.Keys(found))[0])
	}
	return m, nil
}

// CheckKey refuses to restore secrets the keyring cannot open: the archive's key must be the
// configured one, or one of the old keys kept for a rotation.
func (m Manifest) CheckKey(keys *secrets.Keyring) error {
	if keys.Knows(m.KeyID) {
		return nil
	}
	return fmt.Errorf("the archive's secrets are sealed with the master key %s, and the configured key is %s: "+
		"set %s to that key (or put its file at <data-dir>/%s) and restore again; without it no secret of the archive can be opened",
		m.KeyID, keys.CurrentKeyID(), secrets.EnvKey, secrets.KeyFileName)
}

// CheckBackend refuses an installation that keeps its states in another kind of store (backend
// "file" or "s3") than the archive's.
func (m Manifest) CheckBackend(backend string) error {
	if m.StateBackend != backend {
		return fmt.Errorf("the archive keeps its states in %s, and this installation in %s: restore it onto the same kind of store", m.StateBackend, backend)
	}
	return nil
}

// Restore brings the archive at path, checked by Verify into m, onto the installation in,
// which must be empty: the database with pg_restore, then the states and the blobs; then it
// applies the migrations newer than the archive's, and hands the operations that were running
// back to the workers through queue (see deploy.ResumeRestored).
func Restore(ctx context.Context, in Installation, path string, m Manifest, queue jobs.Queue) error {
	if err := m.CheckBackend(in.StateBackend); err != nil {
		return err
	}
	if err := m.CheckKey(in.Keys); err != nil {
		return err
	}
	if err := in.CheckStoresEmpty(ctx); err != nil {
		return err
	}
	if err := in.CheckDatabaseEmpty(ctx); err != nil {
		return err
	}
	if err := in.load(ctx, path, m, queue); err != nil {
		return fmt.Errorf("the restore stopped part way, leaving part of the archive in the target: empty it (or take a new data directory) before restoring again: %w", err)
	}
	return nil
}

// load writes the archive's parts into the installation, then brings the database to this
// version and resumes the operations that were running.
func (in Installation) load(ctx context.Context, path string, m Manifest, queue jobs.Queue) error {
	spool, err := os.MkdirTemp("", "nimbus-restore-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(spool)
	dumpFile := filepath.Join(spool, databaseEntry)
	var states, objects int
	err = walk(path, func(name string, r io.Reader) error {
		switch {
		case name == databaseEntry:
			_, err := spoolOne(r, name, dumpFile)
			return err
		case strings.HasPrefix(name, stateFolder):
			states++
			key := strings.TrimPrefix(name, stateFolder)
			if in.StateBackend == "s3" {
				return in.State.PutEngine(ctx, key, r, -1)
			}
			return in.State.Put(ctx, key, r, -1)
		case strings.HasPrefix(name, objectsFolder):
			objects++
			return in.Objects.Put(ctx, strings.TrimPrefix(name, objectsFolder), r, -1)
		}
		return nil
	})
	if err != nil {
		return err
	}
	in.say("restored %d state files and %d objects", states, objects)
	if err := restore(ctx, in.DatabaseURL, dumpFile); err != nil {
		return fmt.Errorf("restore the database: %w", err)
	}
	in.say("database restored (taken by Nimbus %s at migration %d)", m.Nimbus, m.Migration)
	if err := db.Migrate(ctx, in.Pool, slog.New(slog.DiscardHandler)); err != nil {
		return err
	}
	in.say("database migrated to this version's schema")
	var resumed int
	err = db.BeginFunc(ctx, in.Pool, func(tx pgx.Tx) error {
		ids, err := deploy.ResumeRestored(ctx, tx, queue)
		resumed = len(ids)
		return err
	})
	if err != nil {
		return fmt.Errorf("resume the operations that were running: %w", err)
	}
	if resumed > 0 {
		in.say("%d operations that were running at backup time go on from their last step when Nimbus starts", resumed)
	}
	return nil
}

// CheckDatabaseEmpty refuses a database that holds anything: a restore writes over nothing.
func (in Installation) CheckDatabaseEmpty(ctx context.Context) error {
	var tables int
	if err := in.Pool.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')").Scan(&tables); err != nil {
		return err
	}
	if tables > 0 {
		return fmt.Errorf("the database is not empty (it has %d tables): restore onto an empty one", tables)
	}
	return nil
}

// CheckStoresEmpty refuses an object store or a store of states that holds anything. It reads
// the stores alone, so that a command may refuse before it makes a database in an empty data
// directory.
func (in Installation) CheckStoresEmpty(ctx context.Context) error {
	states, err := in.State.List(ctx, in.stateArea())
	if err != nil {
		return err
	}
	objects, err := in.objectKeys(ctx)
	if err != nil {
		return err
	}
	if len(states)+len(objects) > 0 {
		return fmt.Errorf("the object store is not empty (it holds %d states and %d objects): restore onto an empty one", len(states), len(objects))
	}
	return nil
}

// walk hands each regular file of the gzipped tar archive at path to fn, in order.
func walk(path string, fn func(name string, r io.Reader) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if h.Typeflag != tar.TypeReg {
			return fmt.Errorf("%s is not a regular file", h.Name)
		}
		if err := fn(h.Name, tr); err != nil {
			return err
		}
	}
	// Reading to the end checks the gzip stream's own checksum.
	_, err = io.Copy(io.Discard, zr)
	return err
}
