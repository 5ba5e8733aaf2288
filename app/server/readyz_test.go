package server_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/app/objstore"
	"nimbus/app/server"
)

// downStore is object storage that cannot be reached, and says why in detail.
type downStore struct{ objstore.Store }

func (downStore) Ping(context.Context) error {
	return errors.New("bucket nimbus-secret-bucket at http://10.9.8.7:9000: Access Denied for key AKIAEXAMPLE")
}

func TestOps_ReadinessNamesStatesAndLogsWhy(t *testing.T) {
	// A database that cannot be reached: nothing listens on port 1.
	pool, err := pgxpool.New(context.Background(), "postgres://nimbus:hunter2@127.0.0.1:1/nimbusdb?connect_timeout=2")
	must(t, err)
	t.Cleanup(pool.Close)
	s := newSite(t, func(d *server.Deps) {
		d.Pool = pool
		d.Objects = downStore{d.Objects}
	})

	r := s.call(t, "GET", "/readyz", "", nil)
	wantStatus(t, r, http.StatusServiceUnavailable)
	got := r.json(t)
	checks, _ := got["checks"].(map[string]any)
	if got["ready"] != false || len(checks) != 2 || checks["database"] != "unreachable" || checks["objects"] != "unreachable" {
		t.Fatalf("readyz = %s, want database and objects unreachable and nothing more", r.body)
	}
	for _, secret := range []string{"127.0.0.1", "nimbusdb", "user=", "10.9.8.7", "nimbus-secret-bucket", "AKIAEXAMPLE", "Access Denied"} {
		if strings.Contains(string(r.body), secret) {
			t.Errorf("readyz shows %q: %s", secret, r.body)
		}
	}
	// Whoever runs the server learns why from the log.
	logs := s.logs.String()
	for _, want := range []string{`check=database state=unreachable err="failed to connect`, "127.0.0.1:1", `check=objects state=unreachable err="bucket nimbus-secret-bucket`} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log lacks %q", want)
		}
	}
}
