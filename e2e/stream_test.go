package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"nimbus/app/domain/component"
	"nimbus/app/kernel/access"
	"nimbus/app/orchestration/environment"
)

// TestBrowser_LiveOperationSaysWhenItsSessionEnds is a person following an operation whose
// session ends meanwhile: the page stops updating, keeps what it showed, and says why with a
// link to sign in again that comes back to the operation.
func TestBrowser_LiveOperationSaysWhenItsSessionEnds(t *testing.T) {
	t.Parallel()
	a := startApp(t)
	ctx := context.Background()
	if _, err := component.EnsureBuiltins(ctx, component.NewService(a.pool, nil, nil)); err != nil {
		t.Fatal(err)
	}
	acme := a.createTenant(t, "acme")
	a.addMember(t, "alice@acme.test", acme.ID, access.User)
	env, err := environment.NewService(a.pool).Create(ctx, a.principal(t, adminEmail), acme.ID, "dev")
	if err != nil {
		t.Fatal(err)
	}
	// A deploy that stays queued (no job works it), so its page keeps its stream open.
	var op uuid.UUID
	err = a.pool.QueryRow(ctx, `
		WITH d AS (INSERT INTO deployed_components (tenant_id, environment_id, component_id, version, name, project, stack)
			SELECT $1, $2, id, 1, 'web', 'simcloud-machine', 'web-1' FROM components WHERE name = 'simcloud-machine' RETURNING id)
		INSERT INTO operations (deployment_id, kind) SELECT id, 'deploy' FROM d RETURNING id`, acme.ID, env.ID).Scan(&op)
	if err != nil {
		t.Fatal(err)
	}

	alice := newSession(t, newBrowser(t), a)
	// The page can only hear its stream end once the stream is open: note when it opens.
	_, err = chromedp.Call(alice.ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
		Source: `document.addEventListener("htmx:sseOpen", () => { window.nimbusStreamOpen = true })`,
	})
	if err != nil {
		t.Fatal(err)
	}
	alice.signIn("alice@acme.test", userPassword)
	alice.open("/operations/" + op.String())
	alice.across(`window.nimbusStreamOpen === true`, 10*time.Second)

	// The session expires while the page is open.
	if _, err := a.pool.Exec(ctx, `UPDATE sessions SET expires_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	alice.across(`document.querySelector('[data-testid="stream-closed"]') !== null`, 40*time.Second)
	if got := alice.text(`[data-testid="stream-closed"]`); !strings.HasPrefix(got, "Your session has ended, so this page is no longer updated.") {
		t.Fatalf("the page says %q", got)
	}
	link := eval[string](alice, `document.querySelector('[data-testid="stream-closed"] a').getAttribute('href')`)
	if link != "/login?next=%2Foperations%2F"+op.String() {
		t.Fatalf("sign in again at %q", link)
	}
	if got := alice.text(`[data-testid="operation-status"]`); got != "queued" {
		t.Fatalf("the last state shown is gone: status %q", got)
	}
	alice.screenshot("operation-session-ended")
}

// TestBrowser_LiveOperationReachesItsEnd holds the page's stream in the browser to end the
// operation at the worst moments: between the page's render and its stream's start, and with
// a stream that closes without the final state. The page shows the end either way. A stream
// cut short is taken up again where it stopped, by the id of the last log line it sent.
func TestBrowser_LiveOperationReachesItsEnd(t *testing.T) {
	t.Parallel()
	a := startApp(t)
	ctx := context.Background()
	if _, err := component.EnsureBuiltins(ctx, component.NewService(a.pool, nil, nil)); err != nil {
		t.Fatal(err)
	}
	acme := a.createTenant(t, "acme")
	a.addMember(t, "alice@acme.test", acme.ID, access.User)
	env, err := environment.NewService(a.pool).Create(ctx, a.principal(t, adminEmail), acme.ID, "dev")
	if err != nil {
		t.Fatal(err)
	}
	var dep uuid.UUID
	err = a.pool.QueryRow(ctx, `
		INSERT INTO deployed_components (tenant_id, environment_id, component_id, version, name, project, stack)
		SELECT $1, $2, id, 1, 'web', 'simcloud-machine', 'web-1' FROM components WHERE name = 'simcloud-machine' RETURNING id`, acme.ID, env.ID).Scan(&dep)
	if err != nil {
		t.Fatal(err)
	}
	// Queued operations no job works: the test ends them as a worker would.
	queue := func() uuid.UUID {
		var op uuid.UUID
		if err := a.pool.QueryRow(ctx, `INSERT INTO operations (deployment_id, kind) VALUES ($1, 'refresh') RETURNING id`, dep).Scan(&op); err != nil {
			t.Fatal(err)
		}
		return op
	}
	finish := func(op uuid.UUID) {
		_, err := a.pool.Exec(ctx, `UPDATE operations SET status = 'succeeded', started_at = now(), finished_at = now() WHERE id = $1`, op)
		if err != nil {
			t.Fatal(err)
		}
	}
	logLine := func(op uuid.UUID, line string) int64 {
		var id int64
		if err := a.pool.QueryRow(ctx, `INSERT INTO operation_logs (operation_id, line) VALUES ($1, $2) RETURNING id`, op, line).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}

	alice := newSession(t, newBrowser(t), a)
	alice.signIn("alice@acme.test", userPassword)
	streams := alice.hold("*/operations/*/stream*")
	status := `document.querySelector('[data-testid="operation-live"]')?.dataset.status`

	// Ended after the page was rendered, before its stream began.
	op := queue()
	alice.open("/operations/" + op.String())
	held := alice.next(streams, 10*time.Second)
	finish(op)
	held.pass()
	alice.waitWithin(status+` === 'succeeded'`, 20*time.Second)

	// A stream that closes without sending the final state: the page fetches it.
	op = queue()
	alice.open("/operations/" + op.String())
	held = alice.next(streams, 10*time.Second)
	finish(op)
	held.answer("event: end\nid: 0\ndata: \n\n")
	alice.waitWithin(status+` === 'succeeded'`, 20*time.Second)

	// A stream cut after its first new line: the browser asks again from that line on, and
	// gets each line once.
	op = queue()
	logLine(op, "one")
	alice.open("/operations/" + op.String())
	held = alice.next(streams, 10*time.Second)
	two := logLine(op, "two")
	logLine(op, "three")
	// The page came with line one (its stream URL says so); had the browser not said it saw
	// line two, the server would send two again.
	held.answer(fmt.Sprintf("retry: 100\nevent: log\nid: %d\ndata: two\ndata: \n\n", two))
	again := alice.next(streams, 10*time.Second)
	finish(op)
	again.pass()
	alice.waitWithin(status+` === 'succeeded'`, 20*time.Second)
	alice.waitWithin(`document.querySelector('[data-testid="log"]').textContent.includes('three')`, 10*time.Second)
	if got := strings.Fields(alice.text(`[data-testid="log"]`)); !slices.Equal(got, []string{"one", "two", "three"}) {
		t.Errorf("the log shows %q", got)
	}
}

// heldRequest is a request held in the browser until the test lets it through to the server
// or answers it itself.
type heldRequest struct {
	s   *session
	id  fetch.RequestID
	url string
}

// hold holds every request the page makes from now on to a URL that matches one of patterns
// (* for any characters), and hands each to the test.
func (s *session) hold(patterns ...string) <-chan heldRequest {
	s.t.Helper()
	held := make(chan heldRequest, 8)
	events := chromedp.Events(s.ctx, fetch.RequestPaused)
	go func() {
		for e, err := range events {
			if err != nil {
				return
			}
			held <- heldRequest{s: s, id: e.RequestID, url: e.Request.URL}
		}
	}()
	var match []*fetch.RequestPattern
	for _, p := range patterns {
		match = append(match, &fetch.RequestPattern{URLPattern: p})
	}
	if _, err := chromedp.Call(s.ctx, fetch.Enable, fetch.EnableParams{Patterns: match}); err != nil {
		s.t.Fatal(err)
	}
	return held
}

// next is the next request held, failing the test when none comes within timeout.
func (s *session) next(held <-chan heldRequest, timeout time.Duration) heldRequest {
	s.t.Helper()
	select {
	case h := <-held:
		return h
	case <-time.After(timeout):
		s.t.Fatalf("no request held within %s", timeout)
		return heldRequest{}
	}
}

// pass lets the request through to the server.
func (h heldRequest) pass() {
	h.s.t.Helper()
	if _, err := chromedp.Call(h.s.ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: h.id}); err != nil {
		h.s.t.Fatal(err)
	}
}

// answer answers a held stream with body, which then ends.
func (h heldRequest) answer(body string) {
	h.s.t.Helper()
	_, err := chromedp.Call(h.s.ctx, fetch.FulfillRequest, fetch.FulfillRequestParams{RequestID: h.id, ResponseCode: 200,
		ResponseHeaders: []*fetch.HeaderEntry{{Name: "Content-Type", Value: "text/event-stream"}}, Body: []byte(body)})
	if err != nil {
		h.s.t.Fatal(err)
	}
}
