package e2e

import (
	"strings"
	"testing"
	"time"

	"nimbus/app/kernel/access"
)

// TestBrowser_ElevationAndTokenScope is time-boxed access in a browser: a provider admin grants
// a user tenant admin for an hour with a reason, the user's account page says what they hold
// and until when, and revoking it takes the role away from their open session at once. The
// user then makes a read-only token, which the tokens page shows with its scope and expiry.
func TestBrowser_ElevationAndTokenScope(t *testing.T) {
	t.Parallel()
	a := startApp(t)
	acme := a.createTenant(t, "acme")
	a.addMember(t, "dev@acme.test", acme.ID, access.ReadOnly)
	browser := newBrowser(t)
	admin := newSession(t, browser, a)
	admin.signIn(adminEmail, adminPassword)
	dev := newSession(t, browser, a)
	dev.signIn("dev@acme.test", userPassword)
	if status := dev.open("/users"); status != 403 {
		t.Fatalf("a read-only member's users list answers %d before any elevation", status)
	}

	admin.open("/admin/elevations")
	admin.choose("#f-user_id", a.principal(t, "dev@acme.test").UserID.String())
	admin.choose("#f-tenant_id", acme.ID.String())
	admin.choose("#f-role", string(access.TenantAdmin))
	admin.choose("#f-duration", "1h")
	admin.fill("#f-reason", "incident 4711")
	if status := admin.submit(`[data-testid="grant-form"]`); status != 200 {
		t.Fatalf("grant: status %d; field errors: %q", status, admin.fieldError("reason")+admin.fieldError("user_id"))
	}
	if row := rowWith(admin.rows("elevations"), "dev@acme.test"); row == nil || row[2] != "Tenant admin" || !strings.Contains(row[5], "active") {
		t.Fatalf("the elevations table has %q for dev@acme.test", row)
	}
	admin.screenshot("elevations")

	dev.open("/account")
	if got := dev.text(`[data-testid="held-elevations"]`); !strings.Contains(got, "Tenant admin") || !strings.Contains(got, "acme") ||
		!strings.Contains(got, "incident 4711") || !strings.Contains(got, " min") {
		t.Fatalf("the account page says %q of the elevation", got)
	}
	dev.open("/users")
	if got := dev.text(`[data-testid="users"]`); !strings.Contains(got, "dev@acme.test") {
		t.Fatalf("the elevated tenant admin's users list is %q", got)
	}

	admin.open("/admin/elevations")
	admin.eval(`window.confirm = () => true`)
	if status := admin.submit(`[data-testid="elevations"] form[action$="/revoke"]`); status != 200 {
		t.Fatalf("revoke: status %d", status)
	}
	if got := admin.text(`[data-testid="elevation-ending"]`); got != "revoked" {
		t.Fatalf("a revoked elevation shows %q", got)
	}
	if status := dev.open("/users"); status != 403 {
		t.Fatalf("after the revocation the users list answers the same session %d", status)
	}

	dev.open("/tokens")
	dev.fill("#f-name", "dashboards")
	dev.choose("#f-expires", "30")
	dev.choose("#f-scope", "read_only")
	if status := dev.submit(`[data-testid="token-form"]`); status != 201 {
		t.Fatalf("create token: status %d; field errors: %q", status, dev.fieldError("expires")+dev.fieldError("scope"))
	}
	expires := time.Now().Add(30 * 24 * time.Hour).UTC().Format(time.DateOnly)
	if row := rowWith(dev.rows("tokens"), "dashboards"); row == nil || row[2] != "Read-only" || !strings.Contains(row[5], expires) {
		t.Fatalf("the tokens table has %q for the new token", row)
	}
}
