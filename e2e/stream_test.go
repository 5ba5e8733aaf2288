package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"nimbus/app/access"
	"nimbus/app/component"
	"nimbus/app/environment"
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
