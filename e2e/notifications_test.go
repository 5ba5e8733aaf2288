package e2e

import (
	"context"
	"testing"
	"time"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/outbox"
	"nimbus/db"
)

// TestBrowser_TheHeaderCountsUnreadNotifications: an event that concerns a person shows in every
// page's header as an unread count; the count leads to the inbox, whose notification links to
// its page, and marking all read clears the count.
func TestBrowser_TheHeaderCountsUnreadNotifications(t *testing.T) {
	t.Parallel()
	a := startApp(t)
	acme := a.createTenant(t, "acme")
	a.addMember(t, "dev@acme.test", acme.ID, access.User)
	dev := newSession(t, newBrowser(t), a)
	dev.signIn("dev@acme.test", userPassword)
	if n := eval[int](dev, `document.querySelectorAll('[data-testid="notifications-count"]').length`); n != 0 {
		t.Fatalf("a new user's header counts %d unread", n)
	}

	err := outbox.Emit(context.Background(), db.Queries(a.pool), outbox.Event{Type: "elevation.ended",
		Data: map[string]any{"user_id": a.principal(t, "dev@acme.test").UserID, "role": "tenant_admin"}})
	if err != nil {
		t.Fatal(err)
	}
	dev.reloadUntil("/deployments", `document.querySelector('[data-testid="notifications-count"]')?.textContent === '1'`, 2*time.Minute)
	dev.screenshot("header-count")

	dev.follow(`[data-testid="inbox"]`)
	if got := dev.text(`[data-testid="notification"] a`); got != "Your elevation to Tenant admin ended" {
		t.Fatalf("the inbox lists %q", got)
	}
	if status := dev.submit(`form[action="/notifications/read"]`); status != 200 {
		t.Fatalf("mark all read: status %d", status)
	}
	if read := dev.text(`[data-testid="notification"]`); eval[string](dev, `document.querySelector('[data-testid="notification"]').dataset.read`) != "true" {
		t.Fatalf("the notification %q is still unread", read)
	}
	if n := eval[int](dev, `document.querySelectorAll('[data-testid="notifications-count"]').length`); n != 0 {
		t.Fatalf("the header still counts %d after all were read", n)
	}
}
