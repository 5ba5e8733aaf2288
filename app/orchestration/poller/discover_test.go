package poller

import (
	"context"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/domain/inventory"
	"nimbus/app/kernel/access"
	"nimbus/db/dbtest"
)

// TestWorker_DiscoversWhatTheZonesCloudHolds polls a zone's simulated cloud that holds a
// machine Nimbus manages and one made behind its back, while a managed machine was deleted
// behind its back: the stranger becomes an unmanaged item of the zone, the deleted one is
// missing; ignored, the stranger stays so; once it is gone too, its item is decommissioned.
func TestWorker_DiscoversWhatTheZonesCloudHolds(t *testing.T) {
	pool := dbtest.Pool(t)
	ctx := context.Background()
	cloud := t.TempDir()
	apply := func(sql string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	machine := func(id string) string { return filepath.Join(cloud, "machine", id+".json") }
	if err := os.MkdirAll(filepath.Join(cloud, "machine"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"m-kept", "m-stranger"} {
		if err := os.WriteFile(machine(id), []byte(`{"status":"running"}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	source, zone := uuid.New(), uuid.New()
	apply(`INSERT INTO landing_zones (id, name, provider) SELECT $1, 'zone', name FROM semantic_providers WHERE name = 'simcloud'`, zone)
	apply(`INSERT INTO event_sources (id, landing_zone_id, name, kind, config) VALUES ($1, $2, 'sim', 'cloud_provider', '{"provider":"simcloud"}')`,
		source, zone)
	apply(`INSERT INTO inventory_items (type, provider_id, name, landing_zone_id, status)
		VALUES ('simcloud:index:Machine', 'm-kept', 'kept', $1, 'active'), ('simcloud:index:Machine', 'm-deleted', 'deleted', $1, 'changed')`, zone)
	w := NewWorker(pool, Clouds{Simcloud: cloud}, slog.New(slog.DiscardHandler))

	items := func() map[string]string {
		t.Helper()
		rows, err := pool.Query(ctx, `SELECT provider_id, status FROM inventory_items WHERE landing_zone_id = $1`, zone)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]string{}
		for rows.Next() {
			var id, status string
			if err := rows.Scan(&id, &status); err != nil {
				t.Fatal(err)
			}
			out[id] = status
		}
		return out
	}
	events := func() []string {
		t.Helper()
		var out []string
		if err := pool.QueryRow(ctx, `SELECT coalesce(array_agg(type || ' ' || subject ORDER BY type, subject), '{}') FROM event_log
			WHERE type LIKE 'inventory.%'`).Scan(&out); err != nil {
			t.Fatal(err)
		}
		return out
	}

	if err := w.poll(ctx, discard{}, source); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"m-kept": "active", "m-deleted": "missing", "m-stranger": "unmanaged"}
	if got := items(); !maps.Equal(got, want) {
		t.Fatalf("after the first look the zone's items are %v, want %v", got, want)
	}
	if got, want := events(), []string{"inventory.item.discovered m-stranger", "inventory.item.missing deleted"}; !slices.Equal(got, want) {
		t.Fatalf("the inventory told of %q, want %q", got, want)
	}

	// A second look at the same cloud changes nothing.
	if err := w.poll(ctx, discard{}, source); err != nil {
		t.Fatal(err)
	}
	if got := items(); !maps.Equal(got, want) {
		t.Fatalf("a second look left %v, want %v", got, want)
	}

	// Ignored by a provider admin, the stranger stays ignored at the next look: it is not
	// found unmanaged again.
	var stranger uuid.UUID
	if err := pool.QueryRow(ctx, `SELECT id FROM inventory_items WHERE provider_id = 'm-stranger'`).Scan(&stranger); err != nil {
		t.Fatal(err)
	}
	if _, err := inventory.NewService(pool).Ignore(ctx, access.Principal{ProviderAdmin: true}, stranger); err != nil {
		t.Fatal(err)
	}
	if err := w.poll(ctx, discard{}, source); err != nil {
		t.Fatal(err)
	}
	want["m-stranger"] = "ignored"
	var rows int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM inventory_items WHERE landing_zone_id = $1`, zone).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if got := items(); !maps.Equal(got, want) || rows != len(want) {
		t.Fatalf("a look after ignoring the stranger left %v in %d rows, want %v", got, rows, want)
	}

	if err := os.Remove(machine("m-stranger")); err != nil {
		t.Fatal(err)
	}
	if err := w.poll(ctx, discard{}, source); err != nil {
		t.Fatal(err)
	}
	want["m-stranger"] = "decommissioned"
	if got := items(); !maps.Equal(got, want) {
		t.Fatalf("once the stranger is gone the zone's items are %v, want %v", got, want)
	}
}
