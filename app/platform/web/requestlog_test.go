package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
)

// TestRequestLog_AbandonedRequestIsNoServerError: a browser that leaves a page before it has
// loaded (a reload, a click elsewhere) closes its request, and the handler's query is cut short
// with "context canceled". The log says the client abandoned the request, with status 499 at
// debug level, and no error is logged. The same error while the client still waits is the
// server's own failure, a 500 logged as an error.
func TestRequestLog_AbandonedRequestIsNoServerError(t *testing.T) {
	var logs bytes.Buffer // written only while a request is served, read after
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	started := make(chan struct{}, 1)
	e := echo.New()
	e.HTTPErrorHandler = ErrorHandler(log)
	e.Use(RequestLog(log))
	// Cut short by the client: it waits until the client has gone, as a query would.
	e.GET("/approvals", func(c echo.Context) error {
		started <- struct{}{}
		<-c.Request().Context().Done()
		return fmt.Errorf("list approvals: %w", c.Request().Context().Err())
	})
	// Cut short by the server itself, say by a context of its own ending.
	e.GET("/deployments", func(c echo.Context) error {
		return fmt.Errorf("list deployments: %w", context.Canceled)
	})
	served := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.ServeHTTP(w, r)
		served <- struct{}{}
	}))
	t.Cleanup(srv.Close)

	// A budget, not a measure: it holds on a machine busy with other work.
	const budget = 30 * time.Second
	wait := func(ch <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(budget):
			t.Fatalf("%s within %s:\n%s", what, budget, logs.String())
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/approvals", nil)
	if err != nil {
		t.Fatal(err)
	}
	answered := make(chan error, 1)
	go func() {
		resp, err := srv.Client().Do(req)
		if err == nil {
			resp.Body.Close()
		}
		answered <- err
	}()
	wait(started, "the handler did not start")
	cancel() // the browser leaves the page
	if err := <-answered; !errors.Is(err, context.Canceled) {
		t.Fatalf("the abandoning client got %v", err)
	}
	wait(served, "the server did not end the abandoned request")
	got := logs.String()
	if !strings.Contains(got, `level=DEBUG msg="request abandoned by the client" method=GET path=/approvals`) || !strings.Contains(got, "status=499") {
		t.Errorf("the abandoned request is not logged as such:\n%s", got)
	}
	if strings.Contains(got, "status=500") || strings.Contains(got, "level=ERROR") {
		t.Errorf("the abandoned request is logged as a server error:\n%s", got)
	}

	logs.Reset()
	resp, err := srv.Client().Get(srv.URL + "/deployments")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	wait(served, "the server did not end the failed request")
	if resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("a request the server cut short itself answers %d, want 500", resp.StatusCode)
	}
	got = logs.String()
	if !strings.Contains(got, `level=ERROR msg="request failed"`) || !strings.Contains(got, "status=500") || strings.Contains(got, "abandoned") {
		t.Errorf("a request the server cut short itself is not logged as its failure:\n%s", got)
	}
}
