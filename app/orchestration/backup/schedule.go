package backup

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"nimbus/app/kernel/outbox"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/jobs"
)

// archivesFolder is where scheduled backups go in the object store. Its blobs are not backed
// up themselves: each archive would hold all those before it.
const archivesFolder = "backups/"

// Keeper is a store scheduled backups can be kept in, as objstore's directory and bucket are.
type Keeper interface {
	List(ctx context.Context, prefix string) ([]string, error)
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	Delete(ctx context.Context, key string) error
}

// Shelf is where scheduled backups are kept: the object store's backups folder, or a directory
// of their own.
type Shelf struct {
	Store Keeper
	// Prefix is what the archives' keys begin with: archivesFolder in the object store, "" in
	// a directory of their own.
	Prefix string
	// Keep is how many of the newest archives are kept; older ones are deleted.
	Keep int
}

// ObjectShelf keeps archives in the object store's backups folder.
func ObjectShelf(store Keeper, keep int) Shelf {
	return Shelf{Store: store, Prefix: archivesFolder, Keep: keep}
}

// ScheduledArgs asks for a backup onto the shelf.
type ScheduledArgs struct{}

// Kind names the job in River.
func (ScheduledArgs) Kind() string { return "backup" }

// InsertOpts puts backups with the other periodic sweeps, apart from the operations.
func (ScheduledArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: jobs.HousekeepingQueue}
}

// Schedule takes a backup every interval, on one node of the cluster at a time.
func Schedule(interval time.Duration) *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(interval),
		func() (river.JobArgs, *river.InsertOpts) { return ScheduledArgs{}, nil },
		&river.PeriodicJobOpts{ID: "backup"})
}

// Scheduler takes the scheduled backups, and records how each ended: a row of backups and an
// event, backup.succeeded or backup.failed.
type Scheduler struct {
	river.WorkerDefaults[ScheduledArgs]
	in    Installation
	shelf Shelf
	log   *slog.Logger
}

// NewScheduler returns the worker that backs in up onto shelf.
func NewScheduler(in Installation, shelf Shelf, log *slog.Logger) *Scheduler {
	in.Progress = nil
	return &Scheduler{in: in, shelf: shelf, log: log}
}

// Timeout bounds one backup: a large installation's takes minutes.
func (s *Scheduler) Timeout(*river.Job[ScheduledArgs]) time.Duration { return time.Hour }

// Work takes a backup and records its ending; a failure is recorded, not retried: the next
// one is due at the next interval.
func (s *Scheduler) Work(ctx context.Context, _ *river.Job[ScheduledArgs]) error {
	started := time.Now()
	location, size, err := s.take(ctx, started)
	rec := dbgen.RecordBackupParams{StartedAt: started, Succeeded: err == nil, Location: location, Size: size}
	ev := outbox.Event{Type: "backup.succeeded", Subject: "backup", Data: map[string]any{"location": location, "size": size}}
	if err != nil {
		rec.Error = err.Error()
		ev.Type, ev.Data = "backup.failed", map[string]any{"error": rec.Error}
		s.log.Error("scheduled backup failed", "err", err)
	} else {
		s.log.Info("scheduled backup taken", "location", location, "size", size)
	}
	return db.BeginFunc(ctx, s.in.Pool, func(tx pgx.Tx) error {
		q := db.Queries(tx)
		if err := q.RecordBackup(ctx, rec); err != nil {
			return err
		}
		return outbox.Emit(ctx, q, ev)
	})
}

// take writes an archive onto the shelf and deletes those beyond the number kept.
func (s *Scheduler) take(ctx context.Context, started time.Time) (location string, size int64, err error) {
	dir, err := os.MkdirTemp("", "nimbus-scheduled-")
	if err != nil {
		return "", 0, err
	}
	defer os.RemoveAll(dir)
	// Names sort as the archives were taken.
	name := "nimbus-" + started.UTC().Format("20060102-150405.000") + ".tar.gz"
	path := filepath.Join(dir, name)
	if _, err := Backup(ctx, s.in, path); err != nil {
		return "", 0, err
	}
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", 0, err
	}
	location = s.shelf.Prefix + name
	if err := s.shelf.Store.Put(ctx, location, f, info.Size()); err != nil {
		return "", 0, fmt.Errorf("store the archive: %w", err)
	}
	return location, info.Size(), s.prune(ctx)
}

// prune deletes the oldest archives beyond the number kept.
func (s *Scheduler) prune(ctx context.Context) error {
	keys, err := s.shelf.Store.List(ctx, s.shelf.Prefix)
	if err != nil {
		return fmt.Errorf("list the archives kept: %w", err)
	}
	var archives []string
	for _, k := range keys {
		name := strings.TrimPrefix(k, s.shelf.Prefix)
		if !strings.Contains(name, "/") && strings.HasPrefix(name, "nimbus-") && strings.HasSuffix(name, ".tar.gz") {
			archives = append(archives, k)
		}
	}
	slices.Sort(archives)
	for len(archives) > s.shelf.Keep {
		if err := s.shelf.Store.Delete(ctx, archives[0]); err != nil {
			return fmt.Errorf("delete an archive beyond the %d kept: %w", s.shelf.Keep, err)
		}
		archives = archives[1:]
	}
	return nil
}
