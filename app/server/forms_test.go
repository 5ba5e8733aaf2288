package server_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// The form pages that only the API tests reached: each saves on good input and shows the
// problem beside the field on bad input.
func TestPages_EnvironmentAndSemanticForms(t *testing.T) {
	s := newSite(t)
	b := newBrowser(t, s.url)
	b.signIn(t, "admin-a@example.com", "long enough password")

	b.get(t, "/environments")
	form := url.Values{"_csrf": {b.csrf}, "tenant_id": {s.a.ID.String()}, "name": {"Not Valid!"}}
	r := b.post(t, "/environments", form)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.body), `data-field-error="name"`) {
		t.Fatalf("no error beside the name: %.1500s", r.body)
	}
	form.Set("name", "staging")
	wantStatus(t, b.post(t, "/environments", form), http.StatusSeeOther)
	if page := string(b.get(t, "/environments").body); !strings.Contains(page, ">staging<") {
		t.Fatal("the new environment is not listed")
	}

	// Tenant admins see the semantic layer but may not add to it.
	wantStatus(t, b.post(t, "/admin/providers/provider", url.Values{"_csrf": {b.csrf}, "name": {"hetzner"}}), http.StatusForbidden)

	root := newBrowser(t, s.url)
	root.signIn(t, "root@example.com", "correct horse battery")
	root.get(t, "/admin/providers")
	r = root.post(t, "/admin/providers/semantic-type", url.Values{"_csrf": {root.csrf}, "name": {"load balancer"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.body), "UpperCamelCase") {
		t.Fatalf("no explanation of the name rule: %.1500s", r.body)
	}
	r = root.post(t, "/admin/providers/resource-type", url.Values{"_csrf": {root.csrf}, "provider": {"aws"},
		"semantic_type": {"Container"}, "pulumi_type": {"aws:ecs/service:Service"}})
	wantStatus(t, r, http.StatusSeeOther)
	if page := string(root.get(t, "/admin/providers").body); !strings.Contains(page, "aws:ecs/service:Service") {
		t.Fatal("the new mapping is not listed")
	}
	wantStatus(t, root.post(t, "/admin/providers/nonsense", url.Values{"_csrf": {root.csrf}}), http.StatusNotFound)
}
