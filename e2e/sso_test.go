package e2e

import (
	"encoding/json"
	"testing"
	"time"

	"nimbus/app/apptest"
)

// TestBrowser_SignInThroughIdentityProvider is single sign-on in a browser: a provider admin
// configures a real OpenID provider on the settings page; a member of the provider's
// acme-admins group signs in with it and lands in acme as its tenant admin; moved to another
// group at the provider, her next sign-in makes her a user of acme and ends the session she had;
// signing out signs her out at the provider too and brings her back to the sign-in page.
func TestBrowser_SignInThroughIdentityProvider(t *testing.T) {
	t.Parallel()
	a := startApp(t)
	acme := a.createTenant(t, "acme")
	idp := apptest.NewOpenIDProvider(t, a.url)
	idp.AddUser("ada", "ada@acme.test", "acme-admins")
	browser := newBrowser(t)

	admin := newSession(t, browser, a)
	admin.signIn(adminEmail, adminPassword)
	admin.open("/admin/identity-provider")
	if got := admin.text(`[data-testid="sso-callback"]`); got != a.url+"/login/sso/callback" {
		t.Errorf("the page gives the redirect URL %q", got)
	}
	admin.fill("#f-name", "Acme SSO")
	admin.fill("#f-issuer", idp.Issuer)
	admin.fill("#f-client_id", idp.ClientID)
	admin.fill("#f-client_secret", idp.ClientSecret)
	admin.fill("#f-mappings", "acme-admins = tenant_admin acme\nacme-devs = user acme")
	if status := admin.submit(`[data-testid="sso-form"]`); status != 200 {
		t.Fatalf("save the identity provider: status %d", status)
	}
	if got := admin.text(`[data-testid="sso-issuer"]`); got != idp.Issuer {
		t.Fatalf("after saving, the page shows the issuer %q", got)
	}

	ada := newSession(t, browser, a)
	signInWithProvider(t, ada, "ada")
	if role := roleIn(t, ada, acme.ID.String()); role != "tenant_admin" {
		t.Fatalf("ada signed in with the role %q in acme, want tenant_admin", role)
	}

	idp.SetGroups("ada", "acme-devs")
	again := newSession(t, browser, a)
	signInWithProvider(t, again, "ada")
	if role := roleIn(t, again, acme.ID.String()); role != "user" {
		t.Fatalf("after her group changed, ada is %q in acme, want user", role)
	}
	ada.open("/")
	if ada.path() != "/login" {
		t.Fatalf("the session with the lost role is still on %s", ada.path())
	}

	again.open("/")
	again.submit(`form[action="/logout"]`)
	// The page moves on to the provider by itself, which sends the browser back.
	again.across(`location.pathname === '/login' && document.readyState === 'complete'`, time.Minute)
	if again.path() != "/login" {
		t.Fatalf("signed out, the browser is on %s, want the sign-in page", again.path())
	}
	again.open("/")
	if again.path() != "/login" {
		t.Fatal("the session goes on after signing out")
	}
}

// signInWithProvider signs in from the sign-in page's "Sign in with" button, through the
// provider's own login form, and checks that it lands on the dashboard.
func signInWithProvider(t *testing.T, s *session, username string) {
	t.Helper()
	s.open("/login")
	if got := s.text(`[data-testid="sso-login"]`); got != "Sign in with Acme SSO" {
		t.Fatalf("the sign-in page offers %q", got)
	}
	// The button leads through Nimbus to the provider's own login form.
	s.follow(`[data-testid="sso-login"]`)
	s.across(`document.getElementById('username') !== null`, time.Minute)
	s.fill("#username", username)
	s.fill("#password", "secret")
	if status := s.submit("form"); status != 200 {
		t.Fatalf("sign in at the provider as %s: status %d", username, status)
	}
	if path := s.path(); path != "/" {
		t.Fatalf("after the provider, the browser is on %s, want the dashboard", path)
	}
}

// roleIn is the session's role in the tenant, as the API tells it.
func roleIn(t *testing.T, s *session, tenant string) string {
	t.Helper()
	s.open("/api/v1/me")
	var me struct{ Roles map[string]string }
	if err := json.Unmarshal([]byte(s.text("body")), &me); err != nil {
		t.Fatalf("read /api/v1/me: %v", err)
	}
	return me.Roles[tenant]
}
