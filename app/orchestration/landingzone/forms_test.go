package landingzone_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"nimbus/app/apptest"
)

// The landing zone page's forms: a refused template keeps what was typed and puts each problem
// beside its row; a service with parameters that are not JSON says so; retiring needs the name.
func TestPages_LandingZoneForms(t *testing.T) {
	s := apptest.NewSite(t)
	root := apptest.NewBrowser(t, s.URL)
	root.SignIn(t, "root@example.com", "correct horse battery")
	root.Get(t, "/landing-zones")
	r := root.Post(t, "/landing-zones", url.Values{"_csrf": {root.CSRF}, "name": {"Bad Name"}, "provider": {"simcloud"}})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), `data-field-error="name"`) {
		t.Fatalf("no error beside the name: %.1500s", r.Body)
	}
	r = root.Post(t, "/landing-zones", url.Values{"_csrf": {root.CSRF}, "name": {"sim"}, "provider": {"simcloud"}})
	apptest.WantStatus(t, r, http.StatusSeeOther)
	zone := r.Header.Get("Location")

	// The second row names no component; the first row's name breaks the pattern.
	r = root.Post(t, zone+"/templates", url.Values{"_csrf": {root.CSRF}, "name": {"std"},
		"mandatory_components[0].component_id": {s.Shared.ID.String()}, "mandatory_components[0].name": {"Web!"},
		"mandatory_components[1].name": {"db"}})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	page := string(r.Body)
	if !strings.Contains(page, `data-field-error="mandatory_components[1].component_id"`) || !strings.Contains(page, `value="db"`) {
		t.Fatalf("the missing component is not shown beside its row: %.3000s", page)
	}
	r = root.Post(t, zone+"/templates", url.Values{"_csrf": {root.CSRF}, "name": {"std"},
		"mandatory_components[0].component_id": {s.Shared.ID.String()}, "mandatory_components[0].name": {"Web!"},
		"mandatory_components[2].component_id": {s.Shared.ID.String()}, "mandatory_components[2].name": {"db"},
		"mandatory_components[2].p.cores": {"many"}})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	page = string(r.Body)
	for _, want := range []string{`data-field-error="mandatory_components[0].name"`, `data-field-error="mandatory_components[2].parameters.cores"`, `&#34;many&#34; is not a number`} {
		if !strings.Contains(page, want) {
			t.Fatalf("no %s: %.3000s", want, page)
		}
	}
	r = root.Post(t, zone+"/system-services", url.Values{"_csrf": {root.CSRF}, "component_id": {s.Shared.ID.String()},
		"name": {"core"}, "p.cores": {"many"}})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), `data-field-error="parameters.cores"`) || !strings.Contains(string(r.Body), `value="many"`) {
		t.Fatalf("bad parameters: %.2000s", r.Body)
	}
	// A service added by mistake goes again from the page; a template not offered cannot be withdrawn.
	apptest.WantStatus(t, root.Post(t, zone+"/system-services", url.Values{"_csrf": {root.CSRF}, "component_id": {s.Shared.ID.String()},
		"name": {"spare"}, "p.name": {"spare"}}), http.StatusSeeOther)
	var spare string
	apptest.Must(t, s.Pool.QueryRow(t.Context(), `SELECT id::text FROM template_components WHERE name = 'spare'`).Scan(&spare))
	apptest.WantStatus(t, root.Post(t, zone+"/system-services/"+spare+"/remove", url.Values{"_csrf": {root.CSRF}}), http.StatusSeeOther)
	if page := string(root.Get(t, zone).Body); strings.Contains(page, ">spare<") {
		t.Fatal("the removed service is still listed")
	}
	r = root.Post(t, zone+"/templates/"+s.Shared.ID.String()+"/withdraw", url.Values{"_csrf": {root.CSRF}})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), "no template with this ID") {
		t.Fatalf("withdrawing what is not a template: %.2000s", r.Body)
	}
	apptest.WantStatus(t, root.Post(t, zone+"/publish", url.Values{"_csrf": {root.CSRF}}), http.StatusSeeOther)
	if got := s.Call(t, "GET", "/api/v1"+zone, s.Token(t, s.Admin), nil).JSON(t)["status"]; got != "published" {
		t.Fatalf("after the publish form the landing zone is %v", got)
	}
	r = root.Post(t, zone+"/retire", url.Values{"_csrf": {root.CSRF}, "confirm": {"other"}})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), "type sim to confirm") {
		t.Fatalf("retiring without the name: %.2000s", r.Body)
	}
}
