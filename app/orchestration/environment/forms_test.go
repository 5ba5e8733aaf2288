package environment_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"nimbus/app/apptest"
)

// The form pages that only the API tests reached: each saves on good input and shows the
// problem beside the field on bad input.
func TestPages_EnvironmentAndSemanticForms(t *testing.T) {
	s := apptest.NewSite(t)
	b := apptest.NewBrowser(t, s.URL)
	b.SignIn(t, "admin-a@example.com", "long enough password")

	b.Get(t, "/environments")
	form := url.Values{"_csrf": {b.CSRF}, "tenant_id": {s.A.ID.String()}, "name": {"Not Valid!"}}
	r := b.Post(t, "/environments", form)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), `data-field-error="name"`) {
		t.Fatalf("no error beside the name: %.1500s", r.Body)
	}
	form.Set("name", "staging")
	apptest.WantStatus(t, b.Post(t, "/environments", form), http.StatusSeeOther)
	if page := string(b.Get(t, "/environments").Body); !strings.Contains(page, ">staging<") {
		t.Fatal("the new environment is not listed")
	}
	// Its page; decommissioning it needs its name typed.
	var env string
	apptest.Must(t, s.Pool.QueryRow(t.Context(), `SELECT id::text FROM environments WHERE name = 'staging'`).Scan(&env))
	if page := string(b.Get(t, "/environments/"+env).Body); !strings.Contains(page, `data-testid="decommission-form"`) {
		t.Fatalf("the environment page offers no decommissioning: %.2000s", page)
	}
	r = b.Post(t, "/environments/"+env+"/decommission", url.Values{"_csrf": {b.CSRF}, "confirm": {"stage"}})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), "type staging to confirm") {
		t.Fatalf("decommissioning without the name: %.2000s", r.Body)
	}
	apptest.WantStatus(t, b.Post(t, "/environments/"+env+"/decommission", url.Values{"_csrf": {b.CSRF}, "confirm": {"staging"}}), http.StatusSeeOther)
	if got := s.Call(t, "GET", "/api/v1/environments/"+env, s.Token(t, s.AdminA), nil).JSON(t)["status"]; got != "decommissioning" && got != "decommissioned" {
		t.Fatalf("after the decommission form the environment is %v", got)
	}

	// Tenant admins see the semantic layer but may not add to it.
	apptest.WantStatus(t, b.Post(t, "/admin/providers/provider", url.Values{"_csrf": {b.CSRF}, "name": {"hetzner"}}), http.StatusForbidden)

	root := apptest.NewBrowser(t, s.URL)
	root.SignIn(t, "root@example.com", "correct horse battery")
	root.Get(t, "/admin/providers")
	r = root.Post(t, "/admin/providers/semantic-type", url.Values{"_csrf": {root.CSRF}, "name": {"load balancer"}})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), "UpperCamelCase") {
		t.Fatalf("no explanation of the name rule: %.1500s", r.Body)
	}
	r = root.Post(t, "/admin/providers/resource-type", url.Values{"_csrf": {root.CSRF}, "provider": {"aws"},
		"semantic_type": {"Container"}, "pulumi_type": {"aws:ecs/service:Service"}})
	apptest.WantStatus(t, r, http.StatusSeeOther)
	if page := string(root.Get(t, "/admin/providers").Body); !strings.Contains(page, "aws:ecs/service:Service") {
		t.Fatal("the new mapping is not listed")
	}
	apptest.WantStatus(t, root.Post(t, "/admin/providers/nonsense", url.Values{"_csrf": {root.CSRF}}), http.StatusNotFound)
}
