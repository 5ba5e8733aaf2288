package backup_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/riverqueue/river"

	"nimbus/app/apptest"
	"nimbus/app/kernel/objstore"
	"nimbus/app/orchestration/backup"
	"nimbus/app/server"
)

// Scheduled backups go to the object store's backups folder, the newest kept and the older
// deleted, and are no part of the backups after them. Each ending is a row and an event; the
// system page and /metrics show the last success, its size, and a failure after it.
func TestScheduled_KeepsTheNewestAndRecordsEachEnding(t *testing.T) {
	var in backup.Installation
	s := apptest.NewSite(t, func(d *server.Deps) {
		in = *d.Backup
		d.Info.Backups = "every 24h0m0s, the newest 2 kept in the test's objects"
	})
	ctx := context.Background()
	admin := s.Token(t, s.Admin)
	if got := string(s.Call(t, "GET", "/admin/system", admin, nil).Body); !strings.Contains(got, "none yet") {
		t.Fatalf("before the first backup the system page does not say so:\n%s", got)
	}
	store := in.Objects.(backup.Keeper)
	job := &river.Job[backup.ScheduledArgs]{}
	scheduled := backup.NewScheduler(in, backup.ObjectShelf(store, 2), slog.New(slog.DiscardHandler))
	for range 3 {
		apptest.Must(t, scheduled.Work(ctx, job))
	}
	kept, err := store.List(ctx, "backups/")
	apptest.Must(t, err)
	var newest []string
	rows, err := s.Pool.Query(ctx, "SELECT location FROM backups WHERE succeeded ORDER BY created_at DESC LIMIT 2")
	apptest.Must(t, err)
	for rows.Next() {
		var l string
		apptest.Must(t, rows.Scan(&l))
		newest = append([]string{l}, newest...)
	}
	apptest.Must(t, rows.Err())
	if strings.Join(kept, " ") != strings.Join(newest, " ") {
		t.Fatalf("the shelf keeps %v, want the newest two %v", kept, newest)
	}

	// The newest archive is whole, and holds none of the archives before it.
	r, err := in.Objects.Get(ctx, kept[1])
	apptest.Must(t, err)
	archive := filepath.Join(t.TempDir(), "newest.tar.gz")
	f, err := os.Create(archive)
	apptest.Must(t, err)
	_, err = io.Copy(f, r)
	r.Close()
	apptest.Must(t, err)
	apptest.Must(t, f.Close())
	m, err := backup.Verify(archive)
	apptest.Must(t, err)
	for _, e := range m.Entries {
		if strings.Contains(e.Name, "backups/") {
			t.Fatalf("a scheduled backup holds an earlier one: %s", e.Name)
		}
	}

	// A shelf that cannot be written: the failure is recorded, and said.
	blocked := filepath.Join(t.TempDir(), "shelf")
	dir, err := objstore.NewDir(blocked)
	apptest.Must(t, err)
	apptest.Must(t, os.Chmod(blocked, 0o500))
	t.Cleanup(func() { _ = os.Chmod(blocked, 0o700) })
	// Root may write anywhere: a file where the archive's folder would be stops it too.
	apptest.Must(t, os.WriteFile(filepath.Join(blocked, "nope"), nil, 0o600))
	failing := backup.NewScheduler(in, backup.Shelf{Store: dir, Prefix: "nope/", Keep: 2}, slog.New(slog.DiscardHandler))
	apptest.Must(t, failing.Work(ctx, job))

	var succeeded, failed, told, toldFailed int
	apptest.Must(t, s.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE succeeded), count(*) FILTER (WHERE NOT succeeded AND error <> '') FROM backups`).Scan(&succeeded, &failed))
	apptest.Must(t, s.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE type = 'backup.succeeded'), count(*) FILTER (WHERE type = 'backup.failed') FROM event_log`).Scan(&told, &toldFailed))
	if succeeded != 3 || failed != 1 || told != 3 || toldFailed != 1 {
		t.Fatalf("recorded %d succeeded and %d failed backups, told of %d and %d; want 3 and 1 of each", succeeded, failed, told, toldFailed)
	}

	page := string(s.Call(t, "GET", "/admin/system", admin, nil).Body)
	for _, want := range []string{"every 24h0m0s", "failed at", "Last successful backup", newest[1]} {
		if !strings.Contains(page, want) {
			t.Errorf("the system page does not say %q", want)
		}
	}
	resp, err := http.Get(s.URL + "/metrics")
	apptest.Must(t, err)
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"nimbus_backup_last_failed 1", "nimbus_backup_last_success_size_bytes ", "nimbus_backup_last_success_timestamp_seconds "} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics does not show %q", want)
		}
	}
}
