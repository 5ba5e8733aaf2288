package auth_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"nimbus/app/apptest"
	"nimbus/app/domain/auth"
	"nimbus/app/kernel/access"
)

// tokenOf is a new token of p made as spec says.
func tokenOf(t *testing.T, s *apptest.Site, p access.Principal, spec auth.TokenSpec) auth.NewToken {
	t.Helper()
	tok, err := s.Auth.CreateToken(context.Background(), p, spec)
	apptest.Must(t, err)
	return tok
}

func TestTokens_ReadOnlyScopeOnlyReads(t *testing.T) {
	s := apptest.NewSite(t)
	env := s.Dev(t)
	tok := tokenOf(t, s, s.AdminA, auth.TokenSpec{Name: "dashboards", Scope: auth.ScopeReadOnly}).Secret

	apptest.WantStatus(t, s.Call(t, "GET", "/api/v1/environments/"+env.ID.String(), tok, nil), http.StatusOK)
	r := s.Call(t, "POST", "/api/v1/deployments", tok, map[string]any{
		"component_id": s.Shared.ID, "environment_id": env.ID, "name": "web", "parameters": map[string]any{"name": "web"}})
	apptest.WantStatus(t, r, http.StatusForbidden)
	if !strings.Contains(string(r.Body), "read-only") {
		t.Fatalf("the refusal does not say the token is read-only: %s", r.Body)
	}
	var n int
	apptest.Must(t, s.Pool.QueryRow(context.Background(), `SELECT count(*) FROM deployed_components`).Scan(&n))
	if n != 0 {
		t.Fatalf("a read-only token's POST made %d deployments", n)
	}
	// Nor can it make a token that could write.
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/tokens", tok, map[string]any{"name": "wider"}), http.StatusForbidden)
	apptest.WantStatus(t, s.Call(t, "DELETE", "/api/v1/environments/"+env.ID.String(), tok, nil), http.StatusForbidden)
}

func TestTokens_TenantScopeActsWithinItsTenantAlone(t *testing.T) {
	s := apptest.NewSite(t)
	ctx := context.Background()
	// A's admin is a member of B too.
	_, err := s.Tenants.SetMember(ctx, s.Admin, s.B.ID, s.AdminA.UserID, access.User)
	apptest.Must(t, err)
	adminA := s.Principal(t, "admin-a@example.com")
	envA := s.Dev(t)
	envB, err := s.Envs.Create(ctx, s.AdminB, s.B.ID, "prod-b")
	apptest.Must(t, err)

	full := tokenOf(t, s, adminA, auth.TokenSpec{Name: "everything"}).Secret
	apptest.WantStatus(t, s.Call(t, "GET", "/api/v1/environments/"+envB.ID.String(), full, nil), http.StatusOK)

	onlyA := tokenOf(t, s, adminA, auth.TokenSpec{Name: "a only", Scope: auth.ScopeTenant, Tenant: s.A.ID}).Secret
	apptest.WantStatus(t, s.Call(t, "GET", "/api/v1/environments/"+envA.ID.String(), onlyA, nil), http.StatusOK)
	apptest.WantStatus(t, s.Call(t, "GET", "/api/v1/environments/"+envB.ID.String(), onlyA, nil), http.StatusNotFound)
	list := s.Call(t, "GET", "/api/v1/environments", onlyA, nil)
	apptest.WantStatus(t, list, http.StatusOK)
	if strings.Contains(string(list.Body), envB.ID.String()) || !strings.Contains(string(list.Body), envA.ID.String()) {
		t.Fatalf("the tenant token's environments: %s", list.Body)
	}
	tenants := s.Call(t, "GET", "/api/v1/tenants", onlyA, nil)
	if strings.Contains(string(tenants.Body), s.B.ID.String()) {
		t.Fatalf("the tenant token lists tenant B: %s", tenants.Body)
	}
	me := s.Call(t, "GET", "/api/v1/me", onlyA, nil).JSON(t)["roles"].(map[string]any)
	if len(me) != 1 || me[s.A.ID.String()] != "tenant_admin" {
		t.Fatalf("the tenant token acts with the roles %v", me)
	}
	// It makes no token wider than itself.
	r := s.Call(t, "POST", "/api/v1/tokens", onlyA, map[string]any{"name": "wider"})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantProblem(t, r, "scope", "confined")
	r = s.Call(t, "POST", "/api/v1/tokens", onlyA, map[string]any{"name": "same", "scope": "tenant", "tenant_id": s.A.ID})
	apptest.WantStatus(t, r, http.StatusCreated)
}

func TestTokens_ExpiredTokenIsRefusedSayingWhen(t *testing.T) {
	s := apptest.NewSite(t)
	tok := tokenOf(t, s, s.AdminA, auth.TokenSpec{Name: "old", ExpiresAt: time.Now().Add(7 * 24 * time.Hour)})
	apptest.WantStatus(t, s.Call(t, "GET", "/api/v1/me", tok.Secret, nil), http.StatusOK)
	_, err := s.Pool.Exec(context.Background(), `UPDATE api_tokens SET expires_at = '2026-01-02T03:04:05Z' WHERE id = $1`, tok.ID)
	apptest.Must(t, err)
	r := s.Call(t, "GET", "/api/v1/me", tok.Secret, nil)
	apptest.WantStatus(t, r, http.StatusUnauthorized)
	if !strings.Contains(string(r.Body), "expired at 2026-01-02T03:04:05Z") {
		t.Fatalf("the refusal does not say when the token expired: %s", r.Body)
	}
	// The tokens page marks it, with its scope.
	b := apptest.NewBrowser(t, s.URL)
	b.SignIn(t, "admin-a@example.com", "long enough password")
	page := string(b.Get(t, "/tokens").Body)
	if !strings.Contains(page, `data-testid="token-expired"`) || !strings.Contains(page, "Full") {
		t.Fatalf("the tokens page does not mark the expired token: %.3000s", page)
	}
}

func TestTokens_MigratedExpiryIsExplained(t *testing.T) {
	s := apptest.NewSite(t)
	tok := tokenOf(t, s, s.AdminA, auth.TokenSpec{Name: "from before"})
	_, err := s.Pool.Exec(context.Background(), `UPDATE api_tokens SET expiry_assigned = true WHERE id = $1`, tok.ID)
	apptest.Must(t, err)
	b := apptest.NewBrowser(t, s.URL)
	b.SignIn(t, "admin-a@example.com", "long enough password")
	if page := string(b.Get(t, "/tokens").Body); !strings.Contains(page, "Set when tokens came to need an expiry") {
		t.Fatalf("the tokens page does not say where the expiry came from: %.3000s", page)
	}
}

func TestTokens_BadInputNamesTheField(t *testing.T) {
	s := apptest.NewSite(t)
	tok := s.Token(t, s.AdminA)
	for _, c := range []struct {
		body        map[string]any
		field, rule string
	}{
		{map[string]any{"expires_at": "2020-01-01"}, "expires_at", "future"},
		{map[string]any{"expires_at": time.Now().AddDate(2, 0, 0).Format(time.DateOnly)}, "expires_at", "max"},
		{map[string]any{"expires_at": "next tuesday"}, "expires_at", "date"},
		{map[string]any{"expires_in_days": 400}, "expires_in_days", "range"},
		{map[string]any{"scope": "admin"}, "scope", "one_of"},
		{map[string]any{"scope": "tenant"}, "tenant_id", "required"},
		{map[string]any{"scope": "tenant", "tenant_id": s.B.ID}, "tenant_id", "member"},
		{map[string]any{"scope": "tenant", "tenant_id": "0b7e4f7e-9a59-4a0c-8f55-0f0d1c1e2f30"}, "tenant_id", "member"},
	} {
		c.body["name"] = "ci"
		r := s.Call(t, "POST", "/api/v1/tokens", tok, c.body)
		apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
		apptest.WantProblem(t, r, c.field, c.rule)
	}
	// A token without a chosen expiry lasts 90 days; one with a date ends then.
	r := s.Call(t, "POST", "/api/v1/tokens", tok, map[string]any{"name": "ci"})
	apptest.WantStatus(t, r, http.StatusCreated)
	at, err := time.Parse(time.RFC3339, r.JSON(t)["expires_at"].(string))
	apptest.Must(t, err)
	if d := time.Until(at); d < 89*24*time.Hour || d > 90*24*time.Hour {
		t.Fatalf("a token made without an expiry expires in %s", d)
	}

	// The page's form says the same beside its fields.
	b := apptest.NewBrowser(t, s.URL)
	b.SignIn(t, "admin-a@example.com", "long enough password")
	b.Get(t, "/tokens")
	page := b.Post(t, "/tokens", url.Values{"_csrf": {b.CSRF}, "name": {"ci"}, "expires": {"date"}, "expires_at": {"2020-01-01"}, "scope": {"full"}})
	apptest.WantStatus(t, page, http.StatusUnprocessableEntity)
	if !strings.Contains(string(page.Body), `data-field-error="expires_at"`) {
		t.Fatalf("the form does not name expires_at: %.3000s", page.Body)
	}
	page = b.Post(t, "/tokens", url.Values{"_csrf": {b.CSRF}, "name": {"ci"}, "expires": {"30"}, "scope": {"tenant"}, "tenant_id": {s.A.ID.String()}})
	apptest.WantStatus(t, page, http.StatusCreated)
	if !strings.Contains(string(page.Body), `data-testid="new-token"`) || !strings.Contains(string(page.Body), "One tenant") {
		t.Fatalf("the tenant token was not shown: %.3000s", page.Body)
	}
}
