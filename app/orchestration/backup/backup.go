// Package backup writes a whole installation into one archive, and brings an archive back onto
// an empty one: the database, the engine's stack states, the blobs of the object store (full
// operation logs, state backups), and a manifest with each entry's size and SHA-256.
//
// The database and the states must agree: a deployment the database shows deployed must have
// the state its last operation left. A state changes only while an operation runs its engine,
// and an operation runs only once it is taken (deploy's claim). So a backup
//
//  1. pauses the taking of operations (deploy.PauseClaims, an advisory lock every claim waits
//     on, shared), which returns once no claim is under way;
//  2. takes its snapshot of the database (a repeatable-read transaction that exports it);
//  3. copies the states and the blobs;
//  4. lets operations be taken again, and dumps the database as the snapshot saw it
//     (pg_dump --snapshot).
//
// Between 2 and 3 only operations the snapshot shows running may write a state; every other
// state is, when copied, what the snapshot's operations left. The running ones a restore
// resumes (deploy.ResumeRestored): their checkpoints say where they were, and a resumed step
// converges from whatever state it finds (an up refreshes and runs again). Operations queued
// meanwhile wait in the snapshot's past, and run after a restore as they would have.
//
// The master key is never in the archive; its id is, so that a restore can say which key it
// needs and refuse to go on without it.
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
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/app/kernel/objstore"
	"nimbus/app/kernel/secrets"
	"nimbus/app/orchestration/deploy"
	"nimbus/db"
)

// Format is the archive layout this package writes and reads.
const Format = 1

// The archive's entries: the database dump, then the states and the blobs under their own
// folders, then the manifest, last because it holds every other entry's checksum.
const (
	databaseEntry = "database.dump"
	stateFolder   = "state/"
	objectsFolder = "objects/"
	manifestEntry = "manifest.json"
)

// Manifest says what an archive holds and what it needs to be restored.
type Manifest struct {
	Format int `json:"format"`
	// Nimbus is the version that took the backup.
	Nimbus string `json:"nimbus_version"`
	// Migration is the newest of Nimbus's migrations the database had: a restore by a newer
	// Nimbus applies those after it.
	Migration int `json:"migration"`
	// KeyID is the id of the master key the secrets were sealed with (never the key).
	KeyID string `json:"key_id"`
	// StateBackend is where the states were kept: "file" (the data directory) or "s3".
	StateBackend string    `json:"state_backend"`
	TakenAt      time.Time `json:"taken_at"`
	// Running are the operations that were running: a restore resumes them.
	Running int     `json:"running_operations"`
	Entries []Entry `json:"entries"`
}

// Entry is one file of the archive.
type Entry struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Blobs is a store of blobs by key, as objstore's directory and bucket are.
type Blobs interface {
	List(ctx context.Context, prefix string) ([]string, error)
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	PutEngine(ctx context.Context, key string, r io.Reader, size int64) error
}

// Installation is what a backup is taken of, or restored onto.
type Installation struct {
	Pool *pgxpool.Pool
	// DatabaseURL reaches the same database for pg_dump and pg_restore; it holds a password,
	// which goes to them in a file, never in their arguments.
	DatabaseURL string
	// Objects keeps Nimbus's blobs; State the engine's stack states. In a bucket the two are
	// one store, the states in the engine's area (objstore.EngineArea).
	Objects, State Blobs
	// StateBackend is "file" or "s3".
	StateBackend string
	Keys         *secrets.Keyring
	Version      string
	// Progress receives a line as each part is done.
	Progress io.Writer
}

// stateArea is the prefix of the state's keys: the bucket's engine area, or every file of the
// directory of states.
func (in Installation) stateArea() string {
	if in.StateBackend == "s3" {
		return objstore.EngineArea
	}
	return ""
}

// objectKeys are the blobs' keys, without the states a shared bucket holds beside them, and
// without the scheduled backups.
func (in Installation) objectKeys(ctx context.Context) ([]string, error) {
	keys, err := in.Objects.List(ctx, "")
	if err != nil {
		return nil, err
	}
	own := keys[:0]
	for _, k := range keys {
		if !strings.HasPrefix(k, objstore.EngineArea) && !strings.HasPrefix(k, archivesFolder) {
			own = append(own, k)
		}
	}
	return own, nil
}

func (in Installation) say(format string, args ...any) {
	if in.Progress != nil {
		fmt.Fprintf(in.Progress, format+"\n", args...)
	}
}

// Backup writes the installation's archive to path, through a temporary file beside it, so
// that path holds a whole archive or nothing.
func Backup(ctx context.Context, in Installation, path string) (Manifest, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".part-*")
	if err != nil {
		return Manifest{}, fmt.Errorf("backup: %w", err)
	}
	defer os.Remove(tmp.Name())
	m, err := write(ctx, in, tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return m, fmt.Errorf("backup: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return m, fmt.Errorf("backup: %w", err)
	}
	return m, nil
}

// write takes the backup into f: the pause, the snapshot, the copies and the dump as the
// package's doc tells.
func write(ctx context.Context, in Installation, f *os.File) (Manifest, error) {
	m := Manifest{Format: Format, Nimbus: in.Version, KeyID: in.Keys.CurrentKeyID(), StateBackend: in.StateBackend, TakenAt: time.Now().UTC()}
	ours, _, err := db.MigrationStatus(ctx, in.Pool)
	if err != nil {
		return m, err
	}
	for _, mig := range ours {
		if mig.Applied {
			m.Migration = mig.Version
		}
	}
	spool, err := os.MkdirTemp("", "nimbus-backup-")
	if err != nil {
		return m, err
	}
	defer os.RemoveAll(spool)

	conn, err := in.Pool.Acquire(ctx)
	if err != nil {
		return m, err
	}
	// The session holds the pause and the snapshot: dropped rather than returned to the pool,
	// so that neither outlives an error.
	session := conn.Hijack()
	defer session.Close(context.WithoutCancel(ctx))
	in.say("pausing the start of operations while the states are copied")
	resume, err := deploy.PauseClaims(ctx, session)
	if err != nil {
		return m, err
	}
	snap, err := session.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return m, err
	}
	defer snap.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // read only: nothing to undo
	var snapshot string
	if err := snap.QueryRow(ctx, "SELECT pg_export_snapshot()").Scan(&snapshot); err != nil {
		return m, fmt.Errorf("snapshot the database: %w", err)
	}
	if err := snap.QueryRow(ctx, "SELECT count(*) FROM operations WHERE status = $1", string(deploy.Running)).Scan(&m.Running); err != nil {
		return m, err
	}
	in.say("database snapshot taken; %d operations running go on, and a restore resumes them", m.Running)

	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	// The dump is written first in the archive but taken last: its file waits in the spool.
	dumpFile := filepath.Join(spool, databaseEntry)
	var copies []Entry
	states, err := in.State.List(ctx, in.stateArea())
	if err != nil {
		return m, fmt.Errorf("list the states: %w", err)
	}
	stateEntries, stateBytes, err := spoolBlobs(ctx, in.State, states, stateFolder, spool)
	if err != nil {
		return m, err
	}
	copies = append(copies, stateEntries...)
	in.say("copied %d state files (%s)", len(stateEntries), size(stateBytes))
	objects, err := in.objectKeys(ctx)
	if err != nil {
		return m, fmt.Errorf("list the objects: %w", err)
	}
	objectEntries, objectBytes, err := spoolBlobs(ctx, in.Objects, objects, objectsFolder, spool)
	if err != nil {
		return m, err
	}
	copies = append(copies, objectEntries...)
	in.say("copied %d objects: logs and state backups (%s)", len(objectEntries), size(objectBytes))
	if err := resume(ctx); err != nil {
		return m, err
	}

	if err := dump(ctx, in.DatabaseURL, snapshot, dumpFile); err != nil {
		return m, err
	}
	dumped, err := addFile(tw, databaseEntry, dumpFile)
	if err != nil {
		return m, err
	}
	in.say("database dumped (%s)", size(dumped.Size))
	m.Entries = append([]Entry{dumped}, copies...)
	for _, e := range copies {
		if _, err := addFile(tw, e.Name, filepath.Join(spool, filepath.FromSlash(e.Name))); err != nil {
			return m, err
		}
	}
	manifest, _ := json.MarshalIndent(m, "", "  ")
	if err := tw.WriteHeader(&tar.Header{Name: manifestEntry, Mode: 0o600, Size: int64(len(manifest)), ModTime: m.TakenAt}); err != nil {
		return m, err
	}
	if _, err := tw.Write(manifest); err != nil {
		return m, err
	}
	if err := errors.Join(tw.Close(), zw.Close()); err != nil {
		return m, err
	}
	if err := f.Sync(); err != nil {
		return m, err
	}
	return m, nil
}

// spoolBlobs copies each blob to a file under spool named for its entry, and returns the
// entries. A blob gone since it was listed is left out: its writer removed it (a temporary file
// of the engine's, a state of a stack forgotten meanwhile).
func spoolBlobs(ctx context.Context, from Blobs, keys []string, folder, spool string) ([]Entry, int64, error) {
	var (
		out   []Entry
		total int64
	)
	for _, k := range keys {
		r, err := from.Get(ctx, k)
		if errors.Is(err, objstore.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, 0, fmt.Errorf("copy %s: %w", k, err)
		}
		name := folder + k
		e, err := spoolOne(r, name, filepath.Join(spool, filepath.FromSlash(name)))
		r.Close()
		if err != nil {
			return nil, 0, fmt.Errorf("copy %s: %w", k, err)
		}
		out = append(out, e)
		total += e.Size
	}
	return out, total, nil
}

func spoolOne(r io.Reader, name, path string) (Entry, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return Entry{}, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return Entry{}, err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return Entry{Name: name, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, err
}

// addFile writes the file at path into the archive as name, and returns its entry.
func addFile(tw *tar.Writer, name, path string) (Entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return Entry{}, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return Entry{}, err
	}
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: info.Size(), ModTime: info.ModTime()}); err != nil {
		return Entry{}, err
	}
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(tw, h), f); err != nil {
		return Entry{}, fmt.Errorf("archive %s: %w", name, err)
	}
	return Entry{Name: name, Size: info.Size(), SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// size is a byte count for people.
func size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
