package deploy_test

import (
	"bufio"
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"nimbus/app/apptest"
	"nimbus/app/orchestration/environment"
	"nimbus/app/server"
)

// sse is one server-sent event.
type sse struct{ name, data string }

// openStream opens an operation's live stream as b and returns its events as they come; the
// channel closes when the server ends the stream.
func openStream(t *testing.T, b *apptest.Browser, operation uuid.UUID) <-chan sse {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", b.Base+"/operations/"+operation.String()+"/stream", nil)
	resp, err := b.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		resp.Body.Close()
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := make(chan sse, 100)
	go func() {
		defer close(events)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		var e sse
		for sc.Scan() {
			switch line := sc.Text(); {
			case line == "":
				events <- e
				e = sse{}
			case strings.HasPrefix(line, "event: "):
				e.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				e.data += strings.TrimPrefix(line, "data: ") + "\n"
			}
		}
	}()
	return events
}

// next waits for the stream's next event, or for its end (ok false).
func next(t *testing.T, events <-chan sse) (sse, bool) {
	t.Helper()
	select {
	case e, ok := <-events:
		return e, ok
	case <-time.After(30 * time.Second):
		t.Fatal("no event and no end in 30 seconds")
		return sse{}, false
	}
}

// waitingOperation makes a deployment in tenant A's dev environment with a deploy operation
// that stays queued (no job works it), so its stream stays open.
func waitingOperation(t *testing.T, s *apptest.Site) uuid.UUID {
	t.Helper()
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	var op uuid.UUID
	err = s.Pool.QueryRow(t.Context(), `
		WITH d AS (INSERT INTO deployed_components (tenant_id, environment_id, component_id, version, name, project, stack)
			VALUES ($1, $2, $3, 1, 'web', 'shared-machine', 'web-1') RETURNING id)
		INSERT INTO operations (deployment_id, kind) SELECT id, 'deploy' FROM d RETURNING id`,
		s.A.ID, env.ID, s.Shared.ID).Scan(&op)
	apptest.Must(t, err)
	return op
}

// streamSite is a site whose streams check their viewer every 100ms, and a user of tenant A
// signed in and following a waiting operation, its first state received.
func streamSite(t *testing.T) (*apptest.Site, *apptest.Browser, uuid.UUID, <-chan sse) {
	t.Helper()
	s := apptest.NewSite(t, func(d *server.Deps) { d.StreamRecheck = 100 * time.Millisecond })
	op := waitingOperation(t, s)
	b := apptest.NewBrowser(t, s.URL)
	b.SignIn(t, "user-a@example.com", "long enough password")
	page := b.Get(t, "/operations/"+op.String())
	apptest.WantStatus(t, page, http.StatusOK)
	// The page shows the notice the stream ends with above the last state it received.
	if !strings.Contains(string(page.Body), `sse-close="end"><div id="op-closed" sse-swap="closed"></div><div id="op-live" sse-swap="state">`) {
		t.Fatalf("the operation page has no place for the stream's closing notice: %s", page.Body)
	}
	events := openStream(t, b, op)
	if e, _ := next(t, events); e.name != "state" || !strings.Contains(e.data, `data-status="queued"`) {
		t.Fatalf("first event %q: %.200s", e.name, e.data)
	}
	return s, b, op, events
}

// wantClosed reads the stream to its end and wants a notice containing want, then "end".
func wantClosed(t *testing.T, events <-chan sse, want string) {
	t.Helper()
	var names []string
	for {
		e, ok := next(t, events)
		if !ok {
			break
		}
		names = append(names, e.name)
		if e.name == "closed" && !strings.Contains(e.data, want) {
			t.Fatalf("the notice says %s, want %q", e.data, want)
		}
	}
	if len(names) < 2 || names[len(names)-2] != "closed" || names[len(names)-1] != "end" {
		t.Fatalf("the stream ended with events %v, want closed then end", names)
	}
}

func TestStream_EndsWhenItsViewerSignsOut(t *testing.T) {
	_, b, op, events := streamSite(t)
	r := b.Post(t, "/logout", url.Values{"_csrf": {b.CSRF}})
	if r.Status != http.StatusSeeOther {
		t.Fatalf("sign out: %d", r.Status)
	}
	wantClosed(t, events, `Your session has ended, so this page is no longer updated. <a href="/login?next=%2Foperations%2F`+op.String()+`">Sign in again</a>`)
}

func TestStream_EndsWhenItsViewerLosesTheTenant(t *testing.T) {
	s, _, _, events := streamSite(t)
	r := s.Call(t, "DELETE", "/api/v1/tenants/"+s.A.ID.String()+"/members/"+s.UserA.UserID.String(), s.Token(t, s.Admin), nil)
	if r.Status != http.StatusNoContent && r.Status != http.StatusOK {
		t.Fatalf("remove the membership: %d %s", r.Status, r.Body)
	}
	wantClosed(t, events, "You no longer have access to this operation")
}

func TestStream_EndsWhenItsSessionExpires(t *testing.T) {
	s, _, _, events := streamSite(t)
	_, err := s.Pool.Exec(t.Context(), `UPDATE sessions SET expires_at = now() - interval '1 second'`)
	apptest.Must(t, err)
	wantClosed(t, events, "Your session has ended")
}
