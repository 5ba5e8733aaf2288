package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"

	"nimbus/app/kernel/access"
)

// TestBrowser_SecurityKey is WebAuthn in a browser, with Chrome's virtual authenticator for the
// key: a user with the authenticator app on adds a security key on her account page, and signs
// in with her password and the key.
func TestBrowser_SecurityKey(t *testing.T) {
	t.Parallel()
	a := startApp(t)
	acme := a.createTenant(t, "acme")
	a.addMember(t, "ada@acme.test", acme.ID, access.User)
	browser := newBrowser(t)

	s := newSession(t, browser, a)
	// Keys are bound to a host name, and browsers take none that is an IP address.
	s.base = strings.Replace(a.url, "127.0.0.1", "localhost", 1)
	_, err := chromedp.Call(s.ctx, webauthn.Enable, webauthn.EnableParams{})
	if err == nil {
		_, err = chromedp.Call(s.ctx, webauthn.AddVirtualAuthenticator, webauthn.AddVirtualAuthenticatorParams{Options: &webauthn.VirtualAuthenticatorOptions{
			Protocol: webauthn.AuthenticatorProtocolCtap2, Transport: webauthn.AuthenticatorTransportUsb,
			HasUserVerification: true, IsUserVerified: true, AutomaticPresenceSimulation: true,
		}})
	}
	if err != nil {
		t.Fatalf("add a virtual authenticator: %v", err)
	}

	s.signIn("ada@acme.test", userPassword)
	s.open("/account")
	s.submit(`[data-testid="begin-factor-form"]`)
	secret := s.text(`[data-testid="factor-secret"]`)
	s.fill("#f-confirm-code", totpCode(t, secret, 0))
	if status := s.submit(`[data-testid="confirm-factor-form"]`); status != 201 {
		t.Fatalf("confirm the second factor: status %d", status)
	}
	s.open("/account")
	s.fill("#f-key-name", "laptop key")
	s.click(`[data-testid="add-key"]`)
	s.across(`document.querySelector('[data-testid="security-key"]') !== null || document.querySelector('[data-testid="key-status"]')?.textContent !== ''`, time.Minute)
	if msg := s.text(`[data-testid="key-status"]`); msg != "" {
		t.Fatalf("adding the key: %s", msg)
	}
	if got := s.text(`[data-testid="security-key"]`); !strings.HasPrefix(got, "laptop key") {
		t.Fatalf("the account page lists the key as %q", got)
	}
	s.submit(`form[action="/logout"]`)

	s.open("/login")
	s.fill("#f-email", "ada@acme.test")
	s.fill("#f-password", userPassword)
	s.submit(`form[action="/login"]`)
	if path := s.path(); path != "/login/second-factor" {
		t.Fatalf("after the password, the browser is on %s, want the second step", path)
	}
	s.click(`[data-testid="use-key"]`)
	s.across(`location.pathname === '/' && document.readyState === 'complete' || document.querySelector('[data-testid="key-status"]')?.textContent !== ''`, time.Minute)
	if s.path() != "/" {
		t.Fatalf("signing in with the key: %s", s.text(`[data-testid="key-status"]`))
	}
	if who := s.text(`[data-testid="whoami"]`); who != "ada@acme.test" {
		t.Fatalf("signed in with the key as %q", who)
	}
}
