package server_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/app/apptest"
	"nimbus/app/kernel/objstore"
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
	apptest.Must(t, err)
	t.Cleanup(pool.Close)
	s := apptest.NewSite(t, func(d *server.Deps) {
		d.Pool = pool
		d.Objects = downStore{d.Objects}
	})

	r := s.Call(t, "GET", "/readyz", "", nil)
	apptest.WantStatus(t, r, http.StatusServiceUnavailable)
	got := r.JSON(t)
	checks, _ := got["checks"].(map[string]any)
	if got["ready"] != false || len(checks) != 2 || checks["database"] != "unreachable" || checks["objects"] != "unreachable" {
		t.Fatalf("readyz = %s, want database and objects unreachable and nothing more", r.Body)
	}
	for _, secret := range []string{"127.0.0.1", "nimbusdb", "user=", "10.9.8.7", "nimbus-secret-bucket", "AKIAEXAMPLE", "Access Denied"} {
		if strings.Contains(string(r.Body), secret) {
			t.Errorf("readyz shows %q: %s", secret, r.Body)
		}
	}
	// Whoever runs the server learns why from the log.
	logs := s.Logs.String()
	for _, want := range []string{`check=database state=unreachable err="failed to connect`, "127.0.0.1:1", `check=objects state=unreachable err="bucket nimbus-secret-bucket`} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log lacks %q", want)
		}
	}
}
