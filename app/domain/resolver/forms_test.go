package resolver_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/orchestration/environment"
)

// The resolver pages: a pool, each resolver's form, the next-name preview, and the image
// catalog, each saving on good input and naming the problem beside the field on bad.
func TestPages_PoolsResolversAndImages(t *testing.T) {
	s := apptest.NewSite(t)
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	root := apptest.NewBrowser(t, s.URL)
	root.SignIn(t, "root@example.com", "correct horse battery")

	root.Get(t, "/ipam")
	form := url.Values{"_csrf": {root.CSRF}, "scope": {"environment:" + env.ID.String()}, "name": {"dev-net"}, "prefix": {"10.40.0.5/24"}}
	r := root.Post(t, "/ipam/pools", form)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), "did you mean 10.40.0.0/24") {
		t.Fatalf("no help with the prefix: %.1500s", r.Body)
	}
	form.Set("prefix", "10.40.0.0/24")
	form.Set("reserved", "10.40.0.240/28, 10.40.0.10/32")
	r = root.Post(t, "/ipam/pools", form)
	apptest.WantStatus(t, r, http.StatusSeeOther)
	pool := r.Header.Get("Location")
	if page := string(root.Get(t, pool).Body); !strings.Contains(page, "10.40.0.240/28") || !strings.Contains(page, `data-testid="utilisation"`) {
		t.Fatalf("the pool page: %.2000s", page)
	}

	path := "/environments/" + env.ID.String() + "/resolvers"
	root.Get(t, path)
	r = root.Post(t, path+"/naming", url.Values{"_csrf": {root.CSRF}, "pattern": {"{tenant}-{colour}-{seq}"}})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), "{colour} is not a variable") {
		t.Fatalf("no word on the unknown variable: %.1500s", r.Body)
	}
	apptest.WantStatus(t, root.Post(t, path+"/naming", url.Values{"_csrf": {root.CSRF}, "pattern": {"{env}-{seq:03d}"}, "domain": {"dev.example.com"}}), http.StatusSeeOther)
	poolID := strings.TrimPrefix(pool, "/ipam/pools/")
	apptest.WantStatus(t, root.Post(t, path+"/ipam", url.Values{"_csrf": {root.CSRF}, "pool_id": {poolID}}), http.StatusSeeOther)
	r = root.Post(t, path+"/secret_provisioner", url.Values{"_csrf": {root.CSRF}, "length": {"8"}})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	page := string(root.Get(t, path).Body)
	if !strings.Contains(page, `data-testid="next-name">dev-001<`) || strings.Count(page, ">configured<") != 2 {
		t.Fatalf("the resolvers page: %.3000s", page)
	}
	if got := string(root.Get(t, path+"/naming/next?pattern=%7Benv%7D").Body); !strings.Contains(got, "needs {seq}") {
		t.Fatalf("the preview of a pattern without a number: %q", got)
	}

	// Tenant admins read it all and change nothing.
	admin := apptest.NewBrowser(t, s.URL)
	admin.SignIn(t, "admin-a@example.com", "long enough password")
	admin.Get(t, path)
	apptest.WantStatus(t, admin.Post(t, path+"/naming", url.Values{"_csrf": {admin.CSRF}, "pattern": {"{env}-{seq}"}}), http.StatusForbidden)

	root.Get(t, "/images")
	r = root.Post(t, "/images", url.Values{"_csrf": {root.CSRF}, "provider": {"simcloud"}, "os_family": {"debian"}, "os_version": {"12"}, "image_id": {"x"}})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity) // seeded already
	apptest.WantStatus(t, root.Post(t, "/images", url.Values{"_csrf": {root.CSRF}, "provider": {"simcloud"}, "os_family": {"alpine"},
		"os_version": {"3.20"}, "image_id": {"alpine-3.20"}}), http.StatusSeeOther)
	if page := string(admin.Get(t, "/images").Body); !strings.Contains(page, "alpine-3.20") || strings.Contains(page, `data-testid="image-form"`) {
		t.Fatal("the catalog as a tenant admin sees it: the new image, and no form")
	}
}
