package auth_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"nimbus/app/apptest"
	"nimbus/app/domain/auth"
)

// mappings give A's admins and readers their roles in tenant A, and the platform team provider
// admin.
const mappings = "a-admins = tenant_admin Tenant A\na-readers = read_only Tenant A\nplatform = provider_admin\n"

// withProvider starts an OpenID provider and configures it on the site through the settings
// page, as a provider admin would.
func withProvider(t *testing.T, s *apptest.Site) *apptest.OpenIDProvider {
	t.Helper()
	p := apptest.NewOpenIDProvider(t, s.URL)
	r := saveSettings(t, s, p.Settings(mappings))
	if r.Status != http.StatusSeeOther {
		t.Fatalf("save the identity provider: %d %s", r.Status, r.Body)
	}
	return p
}

func saveSettings(t *testing.T, s *apptest.Site, in auth.NewIdentityProvider) apptest.Reply {
	t.Helper()
	b := apptest.NewBrowser(t, s.URL)
	b.SignIn(t, "root@example.com", "correct horse battery")
	b.Get(t, "/admin/identity-provider")
	form := url.Values{"_csrf": {b.CSRF}, "name": {in.Name}, "issuer": {in.Issuer}, "client_id": {in.ClientID}, "client_secret": {in.ClientSecret},
		"scopes": {in.Scopes}, "groups_claim": {in.GroupsClaim}, "mappings": {in.Mappings}}
	if in.LocalLogin {
		form.Set("local_login", "true")
	}
	return b.Post(t, "/admin/identity-provider", form)
}

// me is who the browser's session acts as, or nil when it has none.
func me(t *testing.T, b *apptest.Browser) map[string]any {
	t.Helper()
	r := b.Get(t, "/api/v1/me")
	if r.Status == http.StatusUnauthorized {
		return nil
	}
	apptest.WantStatus(t, r, http.StatusOK)
	return r.JSON(t)
}

func auditActions(t *testing.T, s *apptest.Site) string {
	t.Helper()
	rows, err := s.Pool.Query(context.Background(), "SELECT action FROM audit_events ORDER BY id")
	apptest.Must(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var a string
		apptest.Must(t, rows.Scan(&a))
		out = append(out, a)
	}
	return strings.Join(out, " ")
}

func TestSSO_GroupMemberLandsInTenantWithRole(t *testing.T) {
	s := apptest.NewSite(t)
	p := withProvider(t, s)
	p.AddUser("ada", "ada@corp.example", "a-admins", "unmapped-group")

	b := apptest.NewBrowser(t, s.URL)
	r, _ := p.SignIn(t, b, "ada")
	if r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/" {
		t.Fatalf("callback: %d %s %s", r.Status, r.Header.Get("Location"), r.Body)
	}
	who := me(t, b)
	if who == nil || who["email"] != "ada@corp.example" || who["provider_admin"] != false {
		t.Fatalf("signed in as %v", who)
	}
	if roles := who["roles"].(map[string]any); len(roles) != 1 || roles[s.A.ID.String()] != "tenant_admin" {
		t.Fatalf("roles = %v, want tenant admin of A alone", roles)
	}
	for _, want := range []string{"user.create", "auth.sso_mapping", "auth.login"} {
		if !strings.Contains(auditActions(t, s), want) {
			t.Errorf("no %s in the audit log: %s", want, auditActions(t, s))
		}
	}

	// The platform team's member is a provider admin, matched again by subject at the next
	// sign-in even with another email.
	p.AddUser("bob", "bob@corp.example", "platform")
	b2 := apptest.NewBrowser(t, s.URL)
	p.SignIn(t, b2, "bob")
	if who := me(t, b2); who == nil || who["provider_admin"] != true {
		t.Fatalf("platform member signed in as %v", who)
	}
}

func TestSSO_ChangedGroupChangesRoleAndEndsOldSessionsAndTokens(t *testing.T) {
	s := apptest.NewSite(t)
	p := withProvider(t, s)
	p.AddUser("ada", "ada@corp.example", "a-admins")
	first := apptest.NewBrowser(t, s.URL)
	p.SignIn(t, first, "ada")
	token := s.Token(t, s.Principal(t, "ada@corp.example"))

	// Signing in again with the same groups changes nothing and ends nothing.
	second := apptest.NewBrowser(t, s.URL)
	p.SignIn(t, second, "ada")
	if me(t, first) == nil {
		t.Fatal("a sign-in that changed no role ended the other session")
	}

	p.SetGroups("ada", "a-readers")
	third := apptest.NewBrowser(t, s.URL)
	p.SignIn(t, third, "ada")
	who := me(t, third)
	if roles := who["roles"].(map[string]any); roles[s.A.ID.String()] != "read_only" {
		t.Fatalf("after the group changed, roles = %v, want read-only in A", roles)
	}
	if me(t, first) != nil || me(t, second) != nil {
		t.Error("the sessions opened with the lost role go on")
	}
	apptest.WantStatus(t, s.Call(t, "GET", "/api/v1/me", token, nil), http.StatusUnauthorized)
	if !strings.Contains(auditActions(t, s), "auth.sso_mapping") {
		t.Error("the mapping applied is not audited")
	}

	// Out of every mapped group, the user is no member of A any more.
	p.SetGroups("ada")
	fourth := apptest.NewBrowser(t, s.URL)
	p.SignIn(t, fourth, "ada")
	if roles := me(t, fourth)["roles"].(map[string]any); len(roles) != 0 {
		t.Fatalf("out of every group, roles = %v", roles)
	}
}

func TestSSO_RefusesBadTokens(t *testing.T) {
	for _, c := range []struct {
		name     string
		audience string
		lifetime time.Duration
		want     string
	}{
		{"wrong audience", "another-client", 0, "meant for another client"},
		{"expired", "", -time.Minute, "expired at"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := apptest.NewSite(t)
			p := withProvider(t, s)
			p.AddUser("ada", "ada@corp.example", "a-admins")
			p.Misbehave(c.audience, c.lifetime)

			b := apptest.NewBrowser(t, s.URL)
			r, _ := p.SignIn(t, b, "ada")
			apptest.WantStatus(t, r, http.StatusUnauthorized)
			if !strings.Contains(string(r.Body), c.want) {
				t.Fatalf("the sign-in page does not say %q: %s", c.want, r.Body)
			}
			if me(t, b) != nil {
				t.Fatal("a refused sign-in opened a session")
			}
			if !strings.Contains(auditActions(t, s), "auth.sso_refused") {
				t.Error("the refusal is not audited")
			}
		})
	}
}

func TestSSO_ReplayedStateIsRefused(t *testing.T) {
	s := apptest.NewSite(t)
	p := withProvider(t, s)
	p.AddUser("ada", "ada@corp.example", "a-admins")
	b := apptest.NewBrowser(t, s.URL)
	_, callback := p.SignIn(t, b, "ada")

	for _, who := range []*apptest.Browser{b, apptest.NewBrowser(t, s.URL)} {
		r := who.Get(t, strings.TrimPrefix(callback, s.URL))
		apptest.WantStatus(t, r, http.StatusUnauthorized)
		if !strings.Contains(string(r.Body), "already used") {
			t.Fatalf("replay: %s", r.Body)
		}
	}
	// Nor is a state Nimbus never sent taken.
	r := b.Get(t, "/login/sso/callback?state=made-up&code=x")
	apptest.WantStatus(t, r, http.StatusUnauthorized)
}

func TestSSO_LogoutEndsTheSessionAndSignsOutAtTheProvider(t *testing.T) {
	s := apptest.NewSite(t)
	p := withProvider(t, s)
	p.AddUser("ada", "ada@corp.example", "a-admins")
	b := apptest.NewBrowser(t, s.URL)
	p.SignIn(t, b, "ada")

	b.Get(t, "/account")
	r := b.Post(t, "/logout", url.Values{"_csrf": {b.CSRF}})
	to, ok := strings.CutPrefix(r.Header.Get("Refresh"), "0; url=")
	if r.Status != http.StatusOK || !ok || !strings.HasPrefix(to, p.Issuer+"/") || !strings.Contains(string(r.Body), `data-testid="sso-signout"`) {
		t.Fatalf("logout: %d moving on to %q, want the provider's end-session endpoint: %s", r.Status, r.Header.Get("Refresh"), r.Body)
	}
	if me(t, b) != nil {
		t.Fatal("the session goes on after logout")
	}
	// The provider takes the request and sends the browser back to Nimbus's sign-in page.
	req, _ := http.NewRequest("GET", to, nil)
	back := apptest.Do(t, b.Client, req)
	if loc := back.Header.Get("Location"); loc != s.URL+"/login" {
		t.Fatalf("the provider answered %d to %q: %s", back.Status, loc, back.Body)
	}
}

func TestSSO_SettingsCheckTheIssuer(t *testing.T) {
	s := apptest.NewSite(t)
	p := apptest.NewOpenIDProvider(t, s.URL)
	gone := apptest.NewOpenIDProvider(t, s.URL)
	gone.Stop()
	for _, c := range []struct {
		name  string
		edit  func(*auth.NewIdentityProvider)
		field string
		want  string
	}{
		{"another issuer", func(in *auth.NewIdentityProvider) { in.Issuer += "/" }, "issuer", "names the issuer"},
		{"unreachable", func(in *auth.NewIdentityProvider) { in.Issuer = gone.Issuer }, "issuer", "could not fetch the discovery document"},
		{"no https", func(in *auth.NewIdentityProvider) { in.Issuer = "http://idp.example" }, "issuer", "must start with https://"},
		{"unknown tenant", func(in *auth.NewIdentityProvider) { in.Mappings = "x = user Nowhere" }, "mappings", "line 1: no tenant is named"},
		{"no role", func(in *auth.NewIdentityProvider) { in.Mappings = "x = owner Tenant A" }, "mappings", "is no role"},
		{"no admin left", func(in *auth.NewIdentityProvider) { in.Mappings, in.LocalLogin = "x = user Tenant A", false }, "local_login", "nobody could manage"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := p.Settings(mappings)
			c.edit(&in)
			r := saveSettings(t, s, in)
			apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
			if !strings.Contains(string(r.Body), `data-field-error="`+c.field+`"`) || !strings.Contains(string(r.Body), c.want) {
				t.Fatalf("the form does not say %q at %s: %s", c.want, c.field, r.Body)
			}
		})
	}
}

func TestSSO_LocalLoginTurnedOff(t *testing.T) {
	s := apptest.NewSite(t)
	p := apptest.NewOpenIDProvider(t, s.URL)
	in := p.Settings(mappings)
	in.LocalLogin = false
	if r := saveSettings(t, s, in); r.Status != http.StatusSeeOther {
		t.Fatalf("save: %d %s", r.Status, r.Body)
	}
	b := apptest.NewBrowser(t, s.URL)
	page := string(b.Get(t, "/login").Body)
	if !strings.Contains(page, "Sign in with Test IdP") || strings.Contains(page, `name="password"`) {
		t.Fatalf("the sign-in page offers: %s", page)
	}
	// The form is gone; a post made anyway, with the sign-in page's token, is refused.
	var token string
	base, _ := url.Parse(s.URL)
	for _, c := range b.Jar.Cookies(base) {
		if c.Name == "nimbus_login_csrf" {
			token = c.Value
		}
	}
	r := b.Post(t, "/login", url.Values{"_csrf": {token}, "email": {"admin-a@example.com"}, "password": {"long enough password"}})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), "turned off") {
		t.Errorf("the refusal does not say why: %s", r.Body)
	}
	if me(t, b) != nil {
		t.Fatal("a password signed in with local sign-in off")
	}
}

// A sign-in waiting for the provider keeps its PKCE verifier sealed: the database holds nothing
// whose hash is the challenge the browser carried to the provider.
func TestSSO_APendingSignInKeepsItsVerifierSealed(t *testing.T) {
	s := apptest.NewSite(t)
	withProvider(t, s)
	b := apptest.NewBrowser(t, s.URL)
	r := b.Get(t, "/login/sso")
	to, err := url.Parse(r.Header.Get("Location"))
	if err != nil || to.Query().Get("code_challenge") == "" {
		t.Fatalf("the sign-in did not go to the provider with a challenge: %d %q", r.Status, r.Header.Get("Location"))
	}
	var stored []byte
	if err := s.Pool.QueryRow(t.Context(), `SELECT verifier FROM oidc_logins`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(stored)
	if base64.RawURLEncoding.EncodeToString(sum[:]) == to.Query().Get("code_challenge") {
		t.Fatal("the database holds the sign-in's PKCE verifier in the clear")
	}
}
