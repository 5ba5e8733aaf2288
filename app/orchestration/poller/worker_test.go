package poller

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"nimbus/app/kernel/secrets"
	"nimbus/db/dbtest"
)

// discard is a queue that routes nothing: these tests read the log.
type discard struct{}

func (discard) InsertManyTx(context.Context, pgx.Tx, []river.InsertManyParams) ([]*rivertype.JobInsertResult, error) {
	return nil, nil
}

// TestWorker_ALookOlderThanWhatIsSavedIsNotSaved runs a second poll while the node is still
// answering the first: the second sees VM 101 stopped and saves it; the first, which saw it
// running before, saves nothing, and the log holds the one stop.
func TestWorker_ALookOlderThanWhatIsSavedIsNotSaved(t *testing.T) {
	pool := dbtest.Pool(t)
	ctx := context.Background()
	keys, err := secrets.Load(t.TempDir(), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	w := NewWorker(pool, Clouds{Keys: keys}, slog.New(slog.DiscardHandler))
	id := uuid.New()
	var mu sync.Mutex
	asked := 0
	var nested error
	srv := httptest.NewTLSServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api2/json/cluster/tasks" {
			fmt.Fprint(rw, `{"data":[]}`)
			return
		}
		mu.Lock()
		asked++
		first := asked == 1
		mu.Unlock()
		if first {
			// The machine stops while the first answer is on its way: a second poll sees it.
			err := w.poll(ctx, discard{}, id)
			mu.Lock()
			nested = err
			mu.Unlock()
			fmt.Fprint(rw, `{"data":[{"vmid":101,"status":"running"}]}`)
			return
		}
		fmt.Fprint(rw, `{"data":[{"vmid":101,"status":"stopped"}]}`)
	}))
	t.Cleanup(srv.Close)

	config, _ := json.Marshal(Config{Provider: ProxmoxProvider, URL: srv.URL, Node: "pve1", TokenID: "nimbus@pve!poller",
		CACert: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))})
	keyID, sealed, err := keys.Seal([]byte("s3cret"), id[:])
	if err != nil {
		t.Fatal(err)
	}
	since := time.Now().Add(-time.Hour).UTC().Truncate(time.Microsecond)
	for _, sql := range []struct {
		sql  string
		args []any
	}{
		{`WITH z AS (INSERT INTO landing_zones (name, provider) SELECT 'zone', name FROM semantic_providers LIMIT 1 RETURNING id)
		  INSERT INTO event_sources (id, landing_zone_id, name, kind, config, secret, secret_key_id) SELECT $1, id, 'pve1', 'cloud_provider', $2, $3, $4 FROM z`,
			[]any{id, config, sealed, keyID}},
		{`INSERT INTO event_poller_state (source_id, resource, state, seen_at) VALUES ($1, '101', 'running', $2)`, []any{id, since}},
	} {
		if _, err := pool.Exec(ctx, sql.sql, sql.args...); err != nil {
			t.Fatal(err)
		}
	}

	err = w.poll(ctx, discard{}, id)
	mu.Lock()
	defer mu.Unlock()
	if err != nil || nested != nil {
		t.Fatalf("the polls: %v, %v", err, nested)
	}
	var state string
	var events []string
	err = pool.QueryRow(ctx, `SELECT (SELECT state FROM event_poller_state WHERE source_id = $1 AND resource = '101'),
		(SELECT coalesce(array_agg(type ORDER BY received_at), '{}') FROM event_log WHERE source_id = $1)`, id).Scan(&state, &events)
	if err != nil {
		t.Fatal(err)
	}
	if asked != 2 || state != Stopped || len(events) != 1 || events[0] != "vm.stopped" {
		t.Fatalf("after %d looks: 101 is saved %s, the log holds %v; want it stopped, with the one stop", asked, state, events)
	}
}
