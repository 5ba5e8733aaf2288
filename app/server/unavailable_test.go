package server

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/labstack/echo/v4"

	"nimbus/app/platform/web"
)

// TestOutage_AnswersUnavailableAndLogsOnce checks what people and scripts get while the
// database is away: a 503 with Retry-After, in JSON, as a page or as htmx text, whether the
// supervisor already knows it is down or a handler just found out, with one line in the log
// per outage.
func TestOutage_AnswersUnavailableAndLogsOnce(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	// Requests are served one at a time, in this goroutine.
	var (
		down bool
		fail error // what the handlers return
	)

	e := echo.New()
	e.HTTPErrorHandler = web.ErrorHandler(log)
	e.Use((&outage{down: func() bool { return down }, log: log}).guard)
	handler := func(c echo.Context) error {
		if fail != nil {
			return fail
		}
		return c.String(http.StatusOK, "ok")
	}
	for _, path := range []string{"/healthz", "/api/v1/tenants", "/deployments"} {
		e.GET(path, handler)
	}
	get := func(path string, htmx bool) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		if htmx {
			req.Header.Set("HX-Request", "true")
		}
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		return rec
	}
	wantAway := func(rec *httptest.ResponseRecorder, what string) {
		t.Helper()
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "5" || !strings.Contains(rec.Body.String(), "try again in a few seconds") {
			t.Fatalf("%s: %d, Retry-After %q: %.300s", what, rec.Code, rec.Header().Get("Retry-After"), rec.Body)
		}
	}

	// Known down: nothing is tried but the probes.
	down = true
	fail = errors.New("the handler must not run")
	wantAway(get("/api/v1/tenants", false), "the API")
	wantAway(get("/deployments", false), "a page")
	wantAway(get("/deployments", true), "an htmx request")
	fail = nil
	if rec := get("/healthz", false); rec.Code != http.StatusOK {
		t.Fatalf("/healthz: %d", rec.Code)
	}

	// Found out by a handler, before anything watching the database noticed.
	down = false
	fail = fmt.Errorf("list tenants: %w", &pgconn.PgError{Code: "57P01", Message: "terminating connection due to unexpected postmaster exit"})
	wantAway(get("/api/v1/tenants", false), "a request the database failed")
	wantAway(get("/deployments", false), "a page the database failed")
	fail = nil
	if rec := get("/api/v1/tenants", false); rec.Code != http.StatusOK {
		t.Fatalf("once the database answers: %d", rec.Code)
	}
	if n := strings.Count(logs.String(), "the database cannot be reached"); n != 1 {
		t.Fatalf("the outage was logged %d times:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "the database answers again") || strings.Contains(logs.String(), "request failed") {
		t.Fatalf("log:\n%s", logs.String())
	}

	// Other failures stay what they are.
	fail = errors.New("a bug")
	if rec := get("/api/v1/tenants", false); rec.Code != http.StatusInternalServerError {
		t.Fatalf("a failure that is not the database's: %d", rec.Code)
	}
}
