package auth_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/server"
)

func TestAPI_TokenAuthentication(t *testing.T) {
	s := apptest.NewSite(t)
	tok := s.Token(t, s.AdminA)

	r := s.Call(t, "GET", "/api/v1/me", tok, nil)
	apptest.WantStatus(t, r, http.StatusOK)
	if r.JSON(t)["email"] != "admin-a@example.com" {
		t.Fatalf("me = %s", r.Body)
	}
	apptest.WantStatus(t, s.Call(t, "GET", "/api/v1/me", "", nil), http.StatusUnauthorized)
	apptest.WantStatus(t, s.Call(t, "GET", "/api/v1/me", "nmb_notatoken", nil), http.StatusUnauthorized)

	// A revoked token stops working at once.
	var list struct{ Tokens []struct{ ID string } }
	_ = json.Unmarshal(s.Call(t, "GET", "/api/v1/tokens", tok, nil).Body, &list)
	if len(list.Tokens) != 1 {
		t.Fatalf("tokens = %+v", list)
	}
	apptest.WantStatus(t, s.Call(t, "DELETE", "/api/v1/tokens/"+list.Tokens[0].ID, tok, nil), http.StatusNoContent)
	apptest.WantStatus(t, s.Call(t, "GET", "/api/v1/me", tok, nil), http.StatusUnauthorized)
}

func TestPages_SignInCSRFAndSignOut(t *testing.T) {
	s := apptest.NewSite(t)
	b := apptest.NewBrowser(t, s.URL)

	r := b.Get(t, "/tenants")
	if r.Status != http.StatusSeeOther || !strings.HasPrefix(r.Header.Get("Location"), "/login?next=") {
		t.Fatalf("signed-out page: %d %s", r.Status, r.Header.Get("Location"))
	}
	// A sign-in form posted without the token the form carries is refused.
	b.Get(t, "/login")
	apptest.WantStatus(t, b.Post(t, "/login", url.Values{"email": {"admin-a@example.com"}, "password": {"long enough password"}}), http.StatusForbidden)

	r = b.SignIn(t, "admin-a@example.com", "long enough password")
	if r.Status != http.StatusSeeOther {
		t.Fatalf("sign in: %d %s", r.Status, r.Body)
	}
	var session *http.Cookie
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		if c.Name == "nimbus_session" {
			session = c
		}
	}
	switch {
	case session == nil:
		t.Fatalf("signing in set no session cookie: %q", r.Header.Values("Set-Cookie"))
	case len(session.Value) < 40:
		t.Fatalf("session cookie too short: %q", session.Value)
	case !session.HttpOnly || session.SameSite != http.SameSiteLaxMode:
		t.Fatalf("session cookie is not HttpOnly and SameSite=Lax: %s", session)
	}
	r = b.Get(t, "/tenants")
	apptest.WantStatus(t, r, http.StatusOK)
	if !strings.Contains(string(r.Body), "Tenant A") || strings.Contains(string(r.Body), "Tenant B") {
		t.Fatal("tenant admin of A must see A and not B")
	}

	form := url.Values{"email": {"user-a@example.com"}, "role": {"read_only"}}
	path := "/tenants/" + s.A.ID.String() + "/members"
	apptest.WantStatus(t, b.Post(t, path, form), http.StatusForbidden) // no token
	form.Set("_csrf", "wrong")
	apptest.WantStatus(t, b.Post(t, path, form), http.StatusForbidden)
	form.Set("_csrf", b.CSRF)
	apptest.WantStatus(t, b.Post(t, path, form, "Sec-Fetch-Site", "cross-site"), http.StatusForbidden)
	apptest.WantStatus(t, b.Post(t, path, form), http.StatusSeeOther)

	apptest.WantStatus(t, b.Post(t, "/logout", url.Values{"_csrf": {b.CSRF}}), http.StatusSeeOther)
	if r := b.Get(t, "/tenants"); r.Status != http.StatusSeeOther {
		t.Fatalf("after sign-out: %d", r.Status)
	}
}

func TestPages_ExpiredSessionSendsToSignIn(t *testing.T) {
	s := apptest.NewSite(t)
	b := apptest.NewBrowser(t, s.URL)
	b.SignIn(t, "user-a@example.com", "long enough password")
	if _, err := s.Pool.Exec(context.Background(), "UPDATE sessions SET expires_at = now() - interval '1 second'"); err != nil {
		t.Fatal(err)
	}
	if r := b.Get(t, "/"); r.Status != http.StatusSeeOther || !strings.HasPrefix(r.Header.Get("Location"), "/login") {
		t.Fatalf("expired session: %d %s", r.Status, r.Header.Get("Location"))
	}
}

func TestPages_SignInIsRateLimited(t *testing.T) {
	s := apptest.NewSite(t)
	b := apptest.NewBrowser(t, s.URL)
	for i := 0; i < 5; i++ {
		// With no trusted proxy, a forwarded address is the client's say-so and is ignored.
		apptest.WantStatus(t, b.SignIn(t, "user-a@example.com", "wrong password!", "X-Forwarded-For", fmt.Sprintf("203.0.113.%d", i)), http.StatusUnprocessableEntity)
	}
	r := b.SignIn(t, "user-a@example.com", "long enough password", "X-Forwarded-For", "203.0.113.99")
	apptest.WantStatus(t, r, http.StatusTooManyRequests)
	if r.Header.Get("Retry-After") == "" || !strings.Contains(string(r.Body), "too many failed sign-ins") {
		t.Fatalf("throttled reply lacks Retry-After or message: %v %s", r.Header, r.Body)
	}
	// The limit is on the email from this address; the address may still sign in as others.
	if r := b.SignIn(t, "admin-a@example.com", "long enough password"); r.Status != http.StatusSeeOther {
		t.Fatalf("another email from the same address: %d", r.Status)
	}
}

func TestPages_SignInFailuresFromOneClientDoNotBlockAnother(t *testing.T) {
	_, loopback, _ := net.ParseCIDR("127.0.0.0/8")
	s := apptest.NewSite(t, func(d *server.Deps) { d.TrustedProxies = []*net.IPNet{loopback} })
	attacker, owner := apptest.NewBrowser(t, s.URL), apptest.NewBrowser(t, s.URL)
	for i := 0; i < 5; i++ {
		apptest.WantStatus(t, attacker.SignIn(t, "user-a@example.com", "wrong password!", "X-Forwarded-For", "203.0.113.7"), http.StatusUnprocessableEntity)
	}
	apptest.WantStatus(t, attacker.SignIn(t, "user-a@example.com", "long enough password", "X-Forwarded-For", "203.0.113.7"), http.StatusTooManyRequests)
	// Behind the proxy the owner is another client, even though the proxy's address is shared.
	apptest.WantStatus(t, owner.SignIn(t, "user-a@example.com", "long enough password", "X-Forwarded-For", "198.51.100.4"), http.StatusSeeOther)
}

func TestPages_HtmxRequestWithoutSessionRedirectsTheWindow(t *testing.T) {
	s := apptest.NewSite(t)
	b := apptest.NewBrowser(t, s.URL)
	b.SignIn(t, "user-a@example.com", "long enough password")
	if _, err := s.Pool.Exec(context.Background(), "UPDATE sessions SET expires_at = now() - interval '1 second'"); err != nil {
		t.Fatal(err)
	}
	// A poll from the component editor: the sign-in page must not be swapped into its panel.
	r := b.Get(t, "/checks/"+s.OfA.ID.String(), "HX-Request", "true", "HX-Current-URL", s.URL+"/components/"+s.OfA.ID.String()+"/edit?tab=code")
	apptest.WantStatus(t, r, http.StatusUnauthorized)
	if got, want := r.Header.Get("HX-Redirect"), "/login?next="+url.QueryEscape("/components/"+s.OfA.ID.String()+"/edit?tab=code"); got != want {
		t.Fatalf("HX-Redirect = %q, want %q", got, want)
	}
	if len(r.Body) != 0 {
		t.Fatalf("401 to htmx has a body: %s", r.Body)
	}
	r = apptest.NewBrowser(t, s.URL).Get(t, "/tenants", "HX-Request", "true")
	apptest.WantStatus(t, r, http.StatusUnauthorized)
	if got := r.Header.Get("HX-Redirect"); got != "/login?next=%2F" {
		t.Fatalf("HX-Redirect without HX-Current-URL = %q", got)
	}
}
