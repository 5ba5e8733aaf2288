package e2e

import (
	"strings"
	"testing"

	"nimbus/app/kernel/access"
)

// TestBrowser_PeopleManageTheirAccounts is the accounts' round in a browser: a provider admin
// finds a user from the users list, resets their password and disables their account, which
// ends the session they had and refuses them at the login form until it is enabled again; the
// user then changes their own password from the email at the top of the page, and the old one
// stops working.
func TestBrowser_PeopleManageTheirAccounts(t *testing.T) {
	t.Parallel()
	a := startApp(t)
	acme := a.createTenant(t, "acme")
	a.addMember(t, "dev@acme.test", acme.ID, access.User)
	browser := newBrowser(t)
	admin := newSession(t, browser, a)
	admin.signIn(adminEmail, adminPassword)
	dev := newSession(t, browser, a)
	dev.signIn("dev@acme.test", userPassword)

	// The users list links each user to their page.
	admin.open("/users")
	href := eval[string](admin, `[...document.querySelectorAll('[data-testid="users"] tbody a')].find(a => a.textContent === 'dev@acme.test')?.getAttribute('href') ?? ''`)
	if !strings.HasPrefix(href, "/users/") {
		t.Fatalf("the users list links dev@acme.test to %q", href)
	}
	admin.follow(`[data-testid="users"] tbody a[href="` + href + `"]`)
	if got := admin.text("h1"); got != "dev@acme.test" {
		t.Fatalf("the user's link leads to a page titled %q", got)
	}
	userPage := admin.path()
	if got := admin.text(`[data-testid="user-roles"]`); !strings.Contains(got, "acme") {
		t.Errorf("the user's page lists their tenants as %q", got)
	}
	admin.screenshot("user")

	// A reset password: the user's session ends, and only the new password signs in.
	const reset = "a password the admin chose"
	admin.fill(`[data-testid="user-reset"] #f-password`, reset)
	if status := admin.submit(`[data-testid="user-reset"]`); status != 200 {
		t.Fatalf("reset the password: status %d", status)
	}
	if got := admin.text(".flash p"); !strings.HasPrefix(got, "Password reset") {
		t.Errorf("after a reset the page says %q", got)
	}
	dev.open("/")
	if dev.path() != "/login" {
		t.Fatalf("after a reset the user's old session is still on %s", dev.path())
	}
	dev.signIn("dev@acme.test", reset)

	// Disabled: the session ends again, and the login form says why, only to the right password.
	admin.open(userPage)
	admin.eval(`window.confirm = () => true`)
	if status := admin.submit(`form[action$="/disable"]`); status != 200 {
		t.Fatalf("disable the account: status %d", status)
	}
	if got := admin.text(`[data-testid="user-disabled"]`); got != "disabled" {
		t.Errorf("a disabled user's page shows %q", got)
	}
	dev.open("/")
	if dev.path() != "/login" {
		t.Fatalf("a disabled user's session is still on %s", dev.path())
	}
	if msg := login(dev, "dev@acme.test", reset); !strings.Contains(msg, "this account is disabled") {
		t.Fatalf("a disabled account signing in is told %q", msg)
	}
	if msg := login(dev, "dev@acme.test", "not the password at all"); strings.Contains(msg, "disabled") {
		t.Fatalf("a wrong password for a disabled account is told %q: that tells a stranger the account exists", msg)
	}
	admin.open(userPage)
	if status := admin.submit(`form[action$="/disable"]`); status != 200 {
		t.Fatalf("enable the account: status %d", status)
	}
	dev.signIn("dev@acme.test", reset)

	// One's own account, from the email at the top of every page.
	dev.follow(`[data-testid="whoami"]`)
	if got := dev.text(`[data-testid="account-email"]`); got != "dev@acme.test" {
		t.Fatalf("the account page is for %q", got)
	}
	dev.screenshot("account")
	dev.fill(`[data-testid="password-form"] #f-current_password`, "not my password")
	dev.fill(`[data-testid="password-form"] #f-new_password`, "my very own password")
	if status := dev.submit(`[data-testid="password-form"]`); status != 422 {
		t.Fatalf("changing the password with a wrong current one: status %d, want 422", status)
	}
	if got := dev.fieldError("current_password"); got == "" {
		t.Error("a wrong current password is not named beside its field")
	}
	dev.fill(`[data-testid="password-form"] #f-current_password`, reset)
	dev.fill(`[data-testid="password-form"] #f-new_password`, "my very own password")
	if status := dev.submit(`[data-testid="password-form"]`); status != 200 {
		t.Fatalf("change the password: status %d", status)
	}
	if got := dev.text(".flash p"); !strings.Contains(got, "Your password is changed") {
		t.Errorf("after the change the page says %q", got)
	}
	again := newSession(t, browser, a)
	if msg := login(again, "dev@acme.test", reset); msg == "" {
		t.Fatal("the old password still signs in")
	}
	again.signIn("dev@acme.test", "my very own password")
}

// login submits the login form and returns what it says beside its fields, "" when it signed in.
func login(s *session, email, password string) string {
	s.t.Helper()
	s.open("/login")
	s.fill("#f-email", email)
	s.fill("#f-password", password)
	s.submit(`form[action="/login"]`)
	if s.path() != "/login" {
		return ""
	}
	return eval[string](s, `[...document.querySelectorAll('form[action="/login"] .field-error')].map(e => e.textContent.trim()).join(' ')`)
}
