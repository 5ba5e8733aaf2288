package server_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"nimbus/app/environment"
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
	// Its page; decommissioning it needs its name typed.
	var env string
	must(t, s.pool.QueryRow(t.Context(), `SELECT id::text FROM environments WHERE name = 'staging'`).Scan(&env))
	if page := string(b.get(t, "/environments/"+env).body); !strings.Contains(page, `data-testid="decommission-form"`) {
		t.Fatalf("the environment page offers no decommissioning: %.2000s", page)
	}
	r = b.post(t, "/environments/"+env+"/decommission", url.Values{"_csrf": {b.csrf}, "confirm": {"stage"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.body), "type staging to confirm") {
		t.Fatalf("decommissioning without the name: %.2000s", r.body)
	}
	wantStatus(t, b.post(t, "/environments/"+env+"/decommission", url.Values{"_csrf": {b.csrf}, "confirm": {"staging"}}), http.StatusSeeOther)
	if got := s.call(t, "GET", "/api/v1/environments/"+env, s.token(t, s.adminA), nil).json(t)["status"]; got != "decommissioning" && got != "decommissioned" {
		t.Fatalf("after the decommission form the environment is %v", got)
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

// The resolver pages: a pool, each resolver's form, the next-name preview, and the image
// catalog, each saving on good input and naming the problem beside the field on bad.
func TestPages_PoolsResolversAndImages(t *testing.T) {
	s := newSite(t)
	env, err := environment.NewService(s.pool).Create(t.Context(), s.adminA, s.a.ID, "dev")
	must(t, err)
	root := newBrowser(t, s.url)
	root.signIn(t, "root@example.com", "correct horse battery")

	root.get(t, "/ipam")
	form := url.Values{"_csrf": {root.csrf}, "scope": {"environment:" + env.ID.String()}, "name": {"dev-net"}, "prefix": {"10.40.0.5/24"}}
	r := root.post(t, "/ipam/pools", form)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.body), "did you mean 10.40.0.0/24") {
		t.Fatalf("no help with the prefix: %.1500s", r.body)
	}
	form.Set("prefix", "10.40.0.0/24")
	form.Set("reserved", "10.40.0.240/28, 10.40.0.10/32")
	r = root.post(t, "/ipam/pools", form)
	wantStatus(t, r, http.StatusSeeOther)
	pool := r.header.Get("Location")
	if page := string(root.get(t, pool).body); !strings.Contains(page, "10.40.0.240/28") || !strings.Contains(page, `data-testid="utilisation"`) {
		t.Fatalf("the pool page: %.2000s", page)
	}

	path := "/environments/" + env.ID.String() + "/resolvers"
	root.get(t, path)
	r = root.post(t, path+"/naming", url.Values{"_csrf": {root.csrf}, "pattern": {"{tenant}-{colour}-{seq}"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.body), "{colour} is not a variable") {
		t.Fatalf("no word on the unknown variable: %.1500s", r.body)
	}
	wantStatus(t, root.post(t, path+"/naming", url.Values{"_csrf": {root.csrf}, "pattern": {"{env}-{seq:03d}"}, "domain": {"dev.example.com"}}), http.StatusSeeOther)
	poolID := strings.TrimPrefix(pool, "/ipam/pools/")
	wantStatus(t, root.post(t, path+"/ipam", url.Values{"_csrf": {root.csrf}, "pool_id": {poolID}}), http.StatusSeeOther)
	r = root.post(t, path+"/secret_provisioner", url.Values{"_csrf": {root.csrf}, "length": {"8"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	page := string(root.get(t, path).body)
	if !strings.Contains(page, `data-testid="next-name">dev-001<`) || strings.Count(page, ">configured<") != 2 {
		t.Fatalf("the resolvers page: %.3000s", page)
	}
	if got := string(root.get(t, path+"/naming/next?pattern=%7Benv%7D").body); !strings.Contains(got, "needs {seq}") {
		t.Fatalf("the preview of a pattern without a number: %q", got)
	}

	// Tenant admins read it all and change nothing.
	admin := newBrowser(t, s.url)
	admin.signIn(t, "admin-a@example.com", "long enough password")
	admin.get(t, path)
	wantStatus(t, admin.post(t, path+"/naming", url.Values{"_csrf": {admin.csrf}, "pattern": {"{env}-{seq}"}}), http.StatusForbidden)

	root.get(t, "/images")
	r = root.post(t, "/images", url.Values{"_csrf": {root.csrf}, "provider": {"simcloud"}, "os_family": {"debian"}, "os_version": {"12"}, "image_id": {"x"}})
	wantStatus(t, r, http.StatusUnprocessableEntity) // seeded already
	wantStatus(t, root.post(t, "/images", url.Values{"_csrf": {root.csrf}, "provider": {"simcloud"}, "os_family": {"alpine"},
		"os_version": {"3.20"}, "image_id": {"alpine-3.20"}}), http.StatusSeeOther)
	if page := string(admin.get(t, "/images").body); !strings.Contains(page, "alpine-3.20") || strings.Contains(page, `data-testid="image-form"`) {
		t.Fatal("the catalog as a tenant admin sees it: the new image, and no form")
	}
}

// The deployment page's forms: parameters updated through the page, a bad value shown beside
// its field, a destroy refused until the name is typed, an upgrade with no version named.
func TestPages_DeploymentForms(t *testing.T) {
	s := newSite(t)
	env, err := environment.NewService(s.pool).Create(t.Context(), s.adminA, s.a.ID, "dev")
	must(t, err)
	admin := s.token(t, s.adminA)
	r := s.call(t, "POST", "/api/v1/deployments", admin, map[string]any{"component_id": s.shared.ID, "environment_id": env.ID,
		"name": "web", "parameters": map[string]any{"name": "web-1"}})
	wantStatus(t, r, http.StatusAccepted)
	body := r.json(t)
	id := body["deployment"].(map[string]any)["id"].(string)
	if op := s.waitOperation(t, admin, body["operation"].(map[string]any)["id"].(string)); op["status"] != "succeeded" {
		t.Fatalf("deploy: %v", op)
	}

	b := newBrowser(t, s.url)
	b.signIn(t, "admin-a@example.com", "long enough password")
	page := "/deployments/" + id
	if got := string(b.get(t, page).body); !strings.Contains(got, `data-testid="param-form"`) || !strings.Contains(got, `value="web-1"`) {
		t.Fatalf("the deployment page: %.2000s", got)
	}
	form := url.Values{"_csrf": {b.csrf}, "action": {"update"}, "p.name": {"web-1"}, "p.cores": {"many"}}
	r = b.post(t, page+"/apply", form)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.body), `data-field-error="parameters.cores"`) {
		t.Fatalf("no error beside cores: %.2000s", r.body)
	}
	form.Set("p.cores", "3")
	r = b.post(t, page+"/apply", form)
	wantStatus(t, r, http.StatusSeeOther)
	if op := s.waitOperation(t, admin, strings.TrimPrefix(r.header.Get("Location"), "/operations/")); op["status"] != "succeeded" || op["kind"] != "update" {
		t.Fatalf("the update from the page: %v", op)
	}

	wantStatus(t, b.post(t, page+"/upgrade", url.Values{"_csrf": {b.csrf}, "action": {"upgrade"}}), http.StatusUnprocessableEntity)
	wantStatus(t, b.post(t, page+"/destroy", url.Values{"_csrf": {b.csrf}, "confirm": {"wbe"}}), http.StatusUnprocessableEntity)
	r = b.post(t, page+"/destroy", url.Values{"_csrf": {b.csrf}, "confirm": {"web"}})
	wantStatus(t, r, http.StatusSeeOther)
	if op := s.waitOperation(t, admin, strings.TrimPrefix(r.header.Get("Location"), "/operations/")); op["status"] != "succeeded" {
		t.Fatalf("the destroy from the page: %v", op)
	}
}

// The landing zone page's forms: a refused template keeps what was typed and puts each problem
// beside its row; a service with parameters that are not JSON says so; retiring needs the name.
func TestPages_LandingZoneForms(t *testing.T) {
	s := newSite(t)
	root := newBrowser(t, s.url)
	root.signIn(t, "root@example.com", "correct horse battery")
	root.get(t, "/landing-zones")
	r := root.post(t, "/landing-zones", url.Values{"_csrf": {root.csrf}, "name": {"Bad Name"}, "provider": {"simcloud"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.body), `data-field-error="name"`) {
		t.Fatalf("no error beside the name: %.1500s", r.body)
	}
	r = root.post(t, "/landing-zones", url.Values{"_csrf": {root.csrf}, "name": {"sim"}, "provider": {"simcloud"}})
	wantStatus(t, r, http.StatusSeeOther)
	zone := r.header.Get("Location")

	// The second row names no component; the first row's name breaks the pattern.
	r = root.post(t, zone+"/templates", url.Values{"_csrf": {root.csrf}, "name": {"std"},
		"mandatory_components[0].component_id": {s.shared.ID.String()}, "mandatory_components[0].name": {"Web!"},
		"mandatory_components[1].name": {"db"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	page := string(r.body)
	if !strings.Contains(page, `data-field-error="mandatory_components[1].component_id"`) || !strings.Contains(page, `value="db"`) {
		t.Fatalf("the missing component is not shown beside its row: %.3000s", page)
	}
	r = root.post(t, zone+"/templates", url.Values{"_csrf": {root.csrf}, "name": {"std"},
		"mandatory_components[0].component_id": {s.shared.ID.String()}, "mandatory_components[0].name": {"Web!"},
		"mandatory_components[2].component_id": {s.shared.ID.String()}, "mandatory_components[2].name": {"db"},
		"mandatory_components[2].p.cores": {"many"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	page = string(r.body)
	for _, want := range []string{`data-field-error="mandatory_components[0].name"`, `data-field-error="mandatory_components[2].parameters.cores"`, `&#34;many&#34; is not a number`} {
		if !strings.Contains(page, want) {
			t.Fatalf("no %s: %.3000s", want, page)
		}
	}
	r = root.post(t, zone+"/system-services", url.Values{"_csrf": {root.csrf}, "component_id": {s.shared.ID.String()},
		"name": {"core"}, "p.cores": {"many"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.body), `data-field-error="parameters.cores"`) || !strings.Contains(string(r.body), `value="many"`) {
		t.Fatalf("bad parameters: %.2000s", r.body)
	}
	// A service added by mistake goes again from the page; a template not offered cannot be withdrawn.
	wantStatus(t, root.post(t, zone+"/system-services", url.Values{"_csrf": {root.csrf}, "component_id": {s.shared.ID.String()},
		"name": {"spare"}, "p.name": {"spare"}}), http.StatusSeeOther)
	var spare string
	must(t, s.pool.QueryRow(t.Context(), `SELECT id::text FROM template_components WHERE name = 'spare'`).Scan(&spare))
	wantStatus(t, root.post(t, zone+"/system-services/"+spare+"/remove", url.Values{"_csrf": {root.csrf}}), http.StatusSeeOther)
	if page := string(root.get(t, zone).body); strings.Contains(page, ">spare<") {
		t.Fatal("the removed service is still listed")
	}
	r = root.post(t, zone+"/templates/"+s.shared.ID.String()+"/withdraw", url.Values{"_csrf": {root.csrf}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.body), "no template with this ID") {
		t.Fatalf("withdrawing what is not a template: %.2000s", r.body)
	}
	wantStatus(t, root.post(t, zone+"/publish", url.Values{"_csrf": {root.csrf}}), http.StatusSeeOther)
	if got := s.call(t, "GET", "/api/v1"+zone, s.token(t, s.admin), nil).json(t)["status"]; got != "published" {
		t.Fatalf("after the publish form the landing zone is %v", got)
	}
	r = root.post(t, zone+"/retire", url.Values{"_csrf": {root.csrf}, "confirm": {"other"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.body), "type sim to confirm") {
		t.Fatalf("retiring without the name: %.2000s", r.body)
	}
}
