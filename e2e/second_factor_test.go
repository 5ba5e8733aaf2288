package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"nimbus/app/kernel/access"
)

// TestBrowser_SecondFactor is TOTP in a browser: a user sets up a second factor on her account
// page from the secret it shows (the QR code beside it), gets ten recovery codes, and from then
// on signs in with her password and a code from her app, or with a recovery code, each good once.
func TestBrowser_SecondFactor(t *testing.T) {
	t.Parallel()
	a := startApp(t)
	acme := a.createTenant(t, "acme")
	a.addMember(t, "ada@acme.test", acme.ID, access.User)
	browser := newBrowser(t)

	s := newSession(t, browser, a)
	s.signIn("ada@acme.test", userPassword)
	s.open("/account")
	if status := s.submit(`[data-testid="begin-factor-form"]`); status != 200 {
		t.Fatalf("begin the second factor: status %d", status)
	}
	secret := s.text(`[data-testid="factor-secret"]`)
	if qr := eval[string](s, `document.querySelector('[data-testid="factor-qr"]').src`); !strings.HasPrefix(qr, "data:image/png;base64,") {
		t.Errorf("the QR code is %.40q, want an inline PNG", qr)
	}
	s.fill("#f-confirm-code", totpCode(t, secret, 0))
	if status := s.submit(`[data-testid="confirm-factor-form"]`); status != 201 {
		t.Fatalf("confirm the second factor: status %d, error %q", status, s.fieldError("confirm-code"))
	}
	codes := eval[[]string](s, `[...document.querySelectorAll('[data-testid="recovery-code"]')].map(e => e.textContent.trim())`)
	if len(codes) != 10 {
		t.Fatalf("%d recovery codes shown, want 10", len(codes))
	}
	s.submit(`form[action="/logout"]`)

	// The password alone leads to the second step, with no session yet.
	password := func() {
		t.Helper()
		s.open("/login")
		s.fill("#f-email", "ada@acme.test")
		s.fill("#f-password", userPassword)
		s.submit(`form[action="/login"]`)
		if path := s.path(); path != "/login/second-factor" {
			t.Fatalf("after the password, the browser is on %s, want the second step", path)
		}
	}
	password()
	s.fill("#f-code", totpCode(t, secret, 30*time.Second)) // the next step's: the enrolment's was taken
	s.submit(`[data-testid="second-step-form"]`)
	if path, who := s.path(), s.text(`[data-testid="whoami"]`); path != "/" || who != "ada@acme.test" {
		t.Fatalf("after the code: on %s as %q", path, who)
	}
	s.submit(`form[action="/logout"]`)

	withRecoveryCode := func() int64 {
		t.Helper()
		password()
		s.follow(`[data-testid="use-recovery"]`)
		s.fill("#f-code", codes[0])
		return s.submit(`[data-testid="second-step-form"]`)
	}
	if status := withRecoveryCode(); status != 200 || s.path() != "/" {
		t.Fatalf("sign in with a recovery code: status %d on %s", status, s.path())
	}
	s.submit(`form[action="/logout"]`)

	if status := withRecoveryCode(); status != 422 || !strings.Contains(s.fieldError("code"), "not one of your unused recovery codes") {
		t.Fatalf("the same recovery code again: status %d, error %q", status, s.fieldError("code"))
	}
	if s.path() != "/login/second-factor" {
		t.Fatalf("a refused recovery code left the browser on %s", s.path())
	}
}

// totpCode is the code an authenticator app with secret shows d from now.
func totpCode(t *testing.T, secret string, d time.Duration) string {
	t.Helper()
	c, err := totp.GenerateCode(secret, time.Now().Add(d))
	if err != nil {
		t.Fatal(err)
	}
	return c
}
