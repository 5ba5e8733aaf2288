package server_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"nimbus/app/apptest"
)

func TestAPI_BadInputGetsClearAnswers(t *testing.T) {
	s := apptest.NewSite(t)
	admin := s.Token(t, s.Admin)
	adminB := s.Token(t, s.AdminB)

	cases := []struct {
		name, method, path, token string
		body                      any
		status                    int
		mention                   string
	}{
		{"malformed JSON", "POST", "/api/v1/tenants", admin, `{"name":`, 400, "not valid JSON"},
		{"unknown field", "POST", "/api/v1/tenants", admin, `{"nome":"x"}`, 400, `unknown field \"nome\"`},
		{"wrong type", "POST", "/api/v1/tenants", admin, `{"name":42}`, 400, `field \"name\" must be a string`},
		{"empty body", "POST", "/api/v1/tenants", admin, ``, 400, "empty"},
		{"blank name", "POST", "/api/v1/tenants", admin, map[string]any{"name": "  "}, 422, `"field":"name"`},
		{"duplicate name", "POST", "/api/v1/tenants", admin, map[string]any{"name": "tenant a"}, 422, "already exists"},
		{"not an admin", "POST", "/api/v1/tenants", adminB, map[string]any{"name": "Mine"}, 403, "permission"},
		{"short password", "POST", "/api/v1/users", admin, map[string]any{"email": "a@example.com", "password": "short"}, 422, `"rule":"min_length"`},
		{"bad email", "POST", "/api/v1/users", admin, map[string]any{"email": "nope", "password": "a long password"}, 422, `"field":"email"`},
		{"bad role", "POST", "/api/v1/tenants/" + s.A.ID.String() + "/members", admin, map[string]any{"user_id": s.UserA.UserID, "role": "owner"}, 422, `"field":"role"`},
		{"unknown user", "POST", "/api/v1/tenants/" + s.A.ID.String() + "/members", admin, map[string]any{"user_id": "00000000-0000-0000-0000-000000000001", "role": "user"}, 422, `"field":"user_id"`},
		{"another tenant's id", "GET", "/api/v1/tenants/" + s.A.ID.String(), adminB, nil, 404, "not found"},
		{"another tenant's members", "POST", "/api/v1/tenants/" + s.A.ID.String() + "/members", adminB, map[string]any{"user_id": s.AdminB.UserID, "role": "user"}, 404, "not found"},
		{"malformed id", "GET", "/api/v1/tenants/not-a-uuid", admin, nil, 404, "not found"},
		{"unknown route", "GET", "/api/v1/nothing-here", admin, nil, 404, "not found"},
		{"oversized body", "POST", "/api/v1/tenants", admin, `{"name":"` + strings.Repeat("x", 2<<20) + `"}`, 413, "too large"},
		{"bad audit time", "GET", "/api/v1/audit-events?since=yesterday", admin, nil, 422, `"field":"since"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := apptest.AuditCount(t, s)
			r := s.Call(t, c.method, c.path, c.token, c.body)
			apptest.WantStatus(t, r, c.status)
			if !strings.Contains(string(r.Body), c.mention) {
				t.Fatalf("reply %s does not mention %q", r.Body, c.mention)
			}
			if after := apptest.AuditCount(t, s); after != before {
				t.Fatalf("a refused request wrote %d audit events", after-before)
			}
		})
	}
}

func TestPages_HtmxErrorsAreShortText(t *testing.T) {
	s := apptest.NewSite(t)
	b := apptest.NewBrowser(t, s.URL)
	b.SignIn(t, "admin-b@example.com", "long enough password")
	r := b.Get(t, "/admin/system", "HX-Request", "true")
	apptest.WantStatus(t, r, http.StatusForbidden)
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") || strings.Contains(string(r.Body), "<") || !strings.Contains(string(r.Body), "permission") {
		t.Fatalf("htmx error is not its message in plain text: %s %s", r.Header.Get("Content-Type"), r.Body)
	}
}

func TestStatic_FilesButNoListings(t *testing.T) {
	s := apptest.NewSite(t)
	apptest.WantStatus(t, s.Call(t, "GET", "/static/js/app.js", "", nil), http.StatusOK)
	for _, dir := range []string{"/static/", "/static/js/", "/static/js", "/static/vendor/"} {
		r := s.Call(t, "GET", dir, "", nil)
		apptest.WantStatus(t, r, http.StatusNotFound)
		if strings.Contains(string(r.Body), "app.js") {
			t.Fatalf("%s lists its files: %s", dir, r.Body)
		}
	}
}

func TestPages_FriendlyErrors(t *testing.T) {
	s := apptest.NewSite(t)
	b := apptest.NewBrowser(t, s.URL)
	b.SignIn(t, "admin-b@example.com", "long enough password")
	for path, status := range map[string]int{
		"/no-such-page":               404,
		"/tenants/" + s.A.ID.String(): 404,
		"/admin/system":               403,
		"/admin/jobs/":                403,
	} {
		r := b.Get(t, path)
		apptest.WantStatus(t, r, status)
		if !strings.Contains(string(r.Body), `class="error-code"`) || strings.Contains(string(r.Body), "Tenant A") {
			t.Fatalf("%s: not the friendly error page, or it leaks: %s", path, r.Body)
		}
	}
}

func TestOps_HealthReadinessMetrics(t *testing.T) {
	s := apptest.NewSite(t)
	apptest.WantStatus(t, s.Call(t, "GET", "/healthz", "", nil), 200)
	r := s.Call(t, "GET", "/readyz", "", nil)
	apptest.WantStatus(t, r, 200)
	if r.JSON(t)["ready"] != true {
		t.Fatalf("readyz = %s", r.Body)
	}
	s.Call(t, "GET", "/api/v1/me", s.Token(t, s.Admin), nil)
	r = s.Call(t, "GET", "/metrics", "", nil)
	for _, want := range []string{`nimbus_http_request_duration_seconds_bucket{code="2xx",method="GET",route="/api/v1/me"`, "nimbus_db_pool_max_connections", "go_goroutines"} {
		if !strings.Contains(string(r.Body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	// Readiness fails while a migration is pending.
	if _, err := s.Pool.Exec(context.Background(), "DELETE FROM schema_migrations"); err != nil {
		t.Fatal(err)
	}
	apptest.WantStatus(t, s.Call(t, "GET", "/readyz", "", nil), http.StatusServiceUnavailable)
}

func mustURL(s string) *url.URL {
	u, _ := url.Parse(s)
	return u
}

func TestPages_JobsUIForProviderAdminsOnly(t *testing.T) {
	s := apptest.NewSite(t)
	admin := apptest.NewBrowser(t, s.URL)
	admin.SignIn(t, "root@example.com", "correct horse battery")
	r := admin.Get(t, "/admin/jobs/")
	apptest.WantStatus(t, r, http.StatusOK)
	if !strings.Contains(string(r.Body), "<html") {
		t.Fatalf("jobs UI did not serve its page: %.200s", r.Body)
	}
	apptest.WantStatus(t, admin.Get(t, "/admin/jobs/api/queues"), http.StatusOK)
	// Its own script posts JSON without our form token; that must get through.
	r = admin.Post(t, "/admin/jobs/api/jobs/cancel", nil, "Content-Type", "application/json", "Sec-Fetch-Site", "same-origin")
	if r.Status == http.StatusForbidden {
		t.Fatalf("jobs UI's own JSON post refused: %s", r.Body)
	}

	user := apptest.NewBrowser(t, s.URL)
	user.SignIn(t, "admin-a@example.com", "long enough password")
	apptest.WantStatus(t, user.Get(t, "/admin/jobs/api/queues"), http.StatusForbidden)
}

func TestOps_MetricsCountErrorsUnderTheirStatus(t *testing.T) {
	s := apptest.NewSite(t)
	tok := s.Token(t, s.AdminB)
	s.Call(t, "GET", "/api/v1/tenants/"+s.A.ID.String(), tok, nil)
	s.Call(t, "POST", "/api/v1/tenants", tok, map[string]any{"name": "x"})
	body := string(s.Call(t, "GET", "/metrics", "", nil).Body)
	for _, want := range []string{
		`nimbus_http_request_duration_seconds_count{code="4xx",method="GET",route="/api/v1/tenants/:id"} 1`,
		`nimbus_http_request_duration_seconds_count{code="4xx",method="POST",route="/api/v1/tenants"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
