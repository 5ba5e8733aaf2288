package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"nimbus/app/domain/component"
)

// TestBrowser_ZoneFormsAskByTheSchemaAndRefuseEarly: a provider admin gives a zone's system
// service and template their inputs in fields made from each component's inputs (an input the
// zone's naming fills shown, not asked for) and reads them back as keys and values; a template
// that sets an input a resolver would fill stops that resolver from being configured, saying
// why, instead of failing every environment later.
func TestBrowser_ZoneFormsAskByTheSchemaAndRefuseEarly(t *testing.T) {
	t.Parallel()
	a := startApp(t)
	ids := a.simcloudComponents(t)
	admin := newSession(t, newBrowser(t), a)
	admin.signIn(adminEmail, adminPassword)
	eu := admin.createZone("sim-eu")
	if got := admin.crumbLinks(); got != "Landing zones /landing-zones" {
		t.Fatalf("the zone's breadcrumbs: %q", got)
	}
	admin.click(`[data-testid="configure-resolvers"]`)
	admin.across(`location.pathname.endsWith('/resolvers') && document.readyState === 'complete'`, 10*time.Second)
	if got := admin.crumbLinks(); got != "Landing zones /landing-zones, sim-eu "+eu {
		t.Fatalf("the resolvers' breadcrumbs: %q", got)
	}
	if got := eval[string](admin, `document.querySelector('[data-testid="resolvers-owner"]').pathname`); got != eu {
		t.Fatalf("the resolvers page leads back to %q", got)
	}
	admin.fill("#f-pattern", "{tenant}-{env}-{seq:02d}")
	admin.submit(`[data-testid="resolver-form-naming"]`)
	// Messages speak the page's words, not the resolver's internal name.
	admin.fill("#f-os_family", "debian")
	admin.fill("#f-os_version", "12")
	admin.submit(`[data-testid="resolver-form-image_catalog"]`)
	if got := admin.text(".flash"); got == "" || strings.Contains(got, "image_catalog") || !strings.Contains(got, "image catalog") {
		t.Fatalf("configuring the image catalog says %q", got)
	}

	// The system service's inputs come with the component chosen: fields, not JSON.
	admin.open(eu)
	admin.pickComponent("#f-component_id", ids["simcloud-network"], `#f-p\.cidr`)
	if got := eval[string](admin, `document.getElementById('f-p.cidr').closest('.field').textContent`); !strings.Contains(got, "Address range") || !strings.Contains(got, "CIDR") {
		t.Fatalf("the range's field says %q, want its title and description", got)
	}
	admin.fill("#f-service-name", "core")
	admin.fill(`#f-p\.name`, "core-net")
	admin.fill(`#f-p\.cidr`, "10.9.0.0/24")
	if status := admin.submit(`[data-testid="service-form"]`); status != 200 {
		t.Fatalf("adding the system service: %d: %s", status, admin.text(".stack"))
	}
	if got := admin.text(`[data-testid="system-services-core"] [data-key="cidr"]`); got != "10.9.0.0/24" {
		t.Fatalf("the service's range shows as %q", got)
	}

	// A template's machine: the name is the zone's naming's to fill; cores has its bounds.
	row := func(i int, input string) string { return fmt.Sprintf(`#f-mandatory_components\[%d\]\.p\.%s`, i, input) }
	admin.fill("#f-template-name", "standard")
	admin.pickComponent(`#f-mandatory_components\[0\]\.component_id`, ids["simcloud-machine"], row(0, "cores"))
	if !eval[bool](admin, `document.getElementById('f-mandatory_components[0].p.name').disabled`) ||
		!strings.Contains(admin.text(`#inputs-0 [data-input="name"] .resolved-note`), "naming resolver") {
		t.Fatal("the template asks for the name the zone's naming fills")
	}
	if got := eval[string](admin, `document.getElementById('f-mandatory_components[0].p.cores').max`); got != "64" {
		t.Fatalf("cores' field has max %q, want the schema's 64", got)
	}
	if got := eval[string](admin, `document.getElementById('f-mandatory_components[0].p.fail_on').tagName`); got != "SELECT" {
		t.Fatalf("fail_on, an enum, is a %s", got)
	}
	admin.fill(`[name="mandatory_components[0].name"]`, "web")
	admin.fill(row(0, "cores"), "3")
	admin.pickComponent(`#f-mandatory_components\[1\]\.component_id`, ids["simcloud-machine"], row(1, "cores"))
	admin.fill(`[name="mandatory_components[1].name"]`, "db")
	if status := admin.submit(`[data-testid="template-form"]`); status != 200 {
		t.Fatalf("adding the template: %d: %s", status, admin.text(".stack"))
	}
	rows := admin.rows("template-standard")
	if len(rows) != 2 || rows[0][0] != "web" || !strings.Contains(rows[0][2], "cores") || !strings.Contains(rows[0][2], "3") || rows[1][2] != "—" {
		t.Fatalf("the template lists %v, want web with cores 3 and db with —", rows)
	}
	if body := admin.text(`[data-testid="template-standard"]`); strings.Contains(body, "{") {
		t.Fatalf("the template's parameters show as JSON: %q", body)
	}

	// The zone's pool says how full it is in addresses, its reserved range apart.
	admin.open(eu)
	admin.fill("#f-pool-name", "eu-net")
	admin.fill("#f-pool-prefix", "10.70.0.0/24")
	admin.fill("#f-pool-reserved", "10.70.0.240/28")
	if status := admin.submit(`[data-testid="zone-pool-form"]`); status != 200 || !strings.HasPrefix(admin.path(), "/ipam/pools/") {
		t.Fatalf("adding the pool: %d on %s", status, admin.path())
	}
	if got := admin.text(`[data-testid="usage"]`); got != "6% used — 16 of 254 addresses, 16 of them reserved" {
		t.Fatalf("the pool's usage: %q", got)
	}
	if got := admin.rows("reserved"); len(got) != 1 || got[0][0] != "10.70.0.240/28" || got[0][1] != "16" {
		t.Fatalf("the reserved ranges: %v", got)
	}
	if got := admin.rows("allocations"); len(got) != 1 || !strings.Contains(got[0][0], "Nothing") {
		t.Fatalf("the allocations of a new pool: %v", got)
	}
	if got := admin.crumbLinks(); got != "IP pools /ipam, landing zone sim-eu "+eu {
		t.Fatalf("the pool's breadcrumbs: %q", got)
	}

	// Where naming is not configured the template may name its machine; naming is then refused
	// for the zone, saying which template stands in the way.
	late := admin.createZone("sim-late")
	admin.fill("#f-template-name", "fixed")
	admin.pickComponent(`#f-mandatory_components\[0\]\.component_id`, ids["simcloud-machine"], row(0, "name"))
	if eval[bool](admin, `document.getElementById('f-mandatory_components[0].p.name').required`) ||
		!strings.Contains(admin.text(`#inputs-0 [data-input="name"] .bound-note`), "naming resolver") {
		t.Fatal("the name, which naming would fill once configured, is not offered to it")
	}
	admin.fill(`[name="mandatory_components[0].name"]`, "web")
	admin.fill(row(0, "name"), "web")
	if status := admin.submit(`[data-testid="template-form"]`); status != 200 {
		t.Fatalf("adding the template: %d: %s", status, admin.text(".stack"))
	}
	// The list of zones sorts on its columns; its form follows it.
	admin.open("/landing-zones")
	admin.below("zones", "zone-form")
	admin.click(`[data-testid="zones"] a[data-sort="name"]`)
	admin.across(`location.search === '?sort=-name' && document.readyState === 'complete'`, 10*time.Second)
	if got := column(admin.rows("zones"), 0); len(got) != 2 || got[0] != "sim-late" || got[1] != "sim-eu" {
		t.Fatalf("zones by name, descending: %v", got)
	}

	admin.open(late + "/resolvers")
	admin.fill("#f-pattern", "{tenant}-{env}-{seq:02d}")
	if status := admin.submit(`[data-testid="resolver-form-naming"]`); status != 422 {
		t.Fatalf("configuring naming under a template that sets the name: %d", status)
	}
	if got := admin.text(`[data-testid="resolver-errors-naming"]`); !strings.Contains(got, "template fixed sets name of web") || !strings.Contains(got, "naming resolver would fill") {
		t.Fatalf("the refusal says %q", got)
	}
}

// simcloudComponents publishes the built-in components and says the ids of the simulated
// cloud's machine and network by name.
func (a *app) simcloudComponents(t *testing.T) map[string]string {
	t.Helper()
	ctx := context.Background()
	if _, err := component.EnsureBuiltins(ctx, component.NewService(a.pool, nil, nil)); err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, name := range []string{"simcloud-machine", "simcloud-network"} {
		var id string
		if err := a.pool.QueryRow(ctx, `SELECT id::text FROM components WHERE name = $1`, name).Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids[name] = id
	}
	return ids
}

// createZone makes a landing zone on the simulated cloud from the zones page, as a provider
// admin does, and returns the zone's page.
func (s *session) createZone(name string) string {
	s.t.Helper()
	s.open("/landing-zones")
	s.fill("#f-name", name)
	s.choose("#f-provider", "simcloud")
	if status := s.submit(`[data-testid="zone-form"]`); status != 200 || !strings.HasPrefix(s.path(), "/landing-zones/") {
		s.t.Fatalf("creating zone %s: %d on %s", name, status, s.path())
	}
	return s.path()
}

// pickComponent chooses a component in a zone form's row as a person would, and waits for its
// inputs' fields to come, field among them.
func (s *session) pickComponent(sel, id, field string) {
	s.t.Helper()
	s.choose(sel, id)
	eval[bool](s, `(document.querySelector(`+jsString(sel)+`).dispatchEvent(new Event('change', {bubbles: true})), true)`)
	s.waitFor(`document.querySelector(` + jsString(field) + `) !== null`)
	s.settled()
}

// TestBrowser_EnvironmentsAndPoolsLeadEverywhere: the lists of environments and pools mix
// tenants, say whose each row is, sort on their columns and put their create form after the
// list; an environment's page and its resolvers carry their trail and link back.
func TestBrowser_EnvironmentsAndPoolsLeadEverywhere(t *testing.T) {
	t.Parallel()
	a := startApp(t)
	acme, beta := a.createTenant(t, "acme"), a.createTenant(t, "beta")
	admin := newSession(t, newBrowser(t), a)
	admin.signIn(adminEmail, adminPassword)
	envs := map[string]string{}
	for _, e := range []struct{ tenant, name string }{{acme.ID.String(), "zulu"}, {beta.ID.String(), "alpha"}} {
		admin.open("/environments")
		admin.below("environments", "environment-form")
		admin.choose("#f-tenant_id", e.tenant)
		admin.fill("#f-name", e.name)
		if status := admin.submit(`[data-testid="environment-form"]`); status != 200 || !strings.HasPrefix(admin.path(), "/environments/") {
			t.Fatalf("adding %s: %d on %s", e.name, status, admin.path())
		}
		envs[e.name] = admin.path()
	}
	if got := admin.crumbLinks(); got != "Environments /environments" {
		t.Fatalf("the environment's breadcrumbs: %q", got)
	}
	if got := eval[string](admin, `document.querySelector('[data-testid="environment-tenant"]').pathname`); got != "/tenants/"+beta.ID.String() {
		t.Fatalf("the environment's tenant links to %q", got)
	}
	admin.open(envs["alpha"] + "/resolvers")
	if got := admin.crumbLinks(); got != "Environments /environments, beta / alpha "+envs["alpha"] {
		t.Fatalf("the resolvers' breadcrumbs: %q", got)
	}
	if got := eval[string](admin, `document.querySelector('[data-testid="resolvers-owner"]').pathname`); got != envs["alpha"] {
		t.Fatalf("the resolvers page leads back to %q", got)
	}

	admin.open("/environments")
	if got := column(admin.rows("environments"), 1); strings.Join(got, " ") != "zulu alpha" {
		t.Fatalf("environments by tenant: %v", got)
	}
	admin.click(`[data-testid="environments"] a[data-sort="name"]`)
	admin.across(`location.search === '?sort=name' && document.readyState === 'complete'`, 10*time.Second)
	if got := column(admin.rows("environments"), 1); strings.Join(got, " ") != "alpha zulu" {
		t.Fatalf("environments by name: %v", got)
	}
	if got := eval[string](admin, `document.querySelector('[data-testid="environments"] tbody a[href^="/tenants/"]').pathname`); got != "/tenants/"+beta.ID.String() {
		t.Fatalf("the first row's tenant links to %q", got)
	}

	for _, p := range []struct{ env, name, prefix string }{{"zulu", "b-net", "10.1.0.0/24"}, {"alpha", "a-net", "10.2.0.0/24"}} {
		admin.open("/ipam")
		admin.below("pools", "pool-form")
		admin.choose("#f-scope", "environment:"+strings.TrimPrefix(envs[p.env], "/environments/"))
		admin.fill("#f-name", p.name)
		admin.fill("#f-prefix", p.prefix)
		if status := admin.submit(`[data-testid="pool-form"]`); status != 200 || !strings.HasPrefix(admin.path(), "/ipam/pools/") {
			t.Fatalf("adding %s: %d on %s", p.name, status, admin.path())
		}
	}
	if got := admin.crumbLinks(); got != "IP pools /ipam, beta / alpha "+envs["alpha"] {
		t.Fatalf("the pool's breadcrumbs: %q", got)
	}
	admin.open("/ipam?sort=name")
	rows := admin.rows("pools")
	if len(rows) != 2 || rows[0][0] != "beta" || rows[0][2] != "a-net" || rows[1][0] != "acme" || rows[1][2] != "b-net" {
		t.Fatalf("pools by name, with their tenants: %v", rows)
	}
}

// crumbLinks lists the breadcrumb trail's links as "label path", joined by commas.
func (s *session) crumbLinks() string {
	s.t.Helper()
	return eval[string](s, `[...document.querySelectorAll('[data-testid="breadcrumbs"] a')].map(a => a.textContent + ' ' + a.pathname).join(', ')`)
}

// below fails unless the element with data-testid form comes after the one with list.
func (s *session) below(list, form string) {
	s.t.Helper()
	if !eval[bool](s, fmt.Sprintf(`!!(document.querySelector('[data-testid=%q]').compareDocumentPosition(document.querySelector('[data-testid=%q]')) & Node.DOCUMENT_POSITION_FOLLOWING)`, list, form)) {
		s.t.Fatalf("the form %s comes before the list %s", form, list)
	}
}

// TestBrowser_ZoneRefersFollowTheMembersBefore: a machine's network in a zone's forms is a
// choice of the members before it that are networks. The system-service form offers the
// zone's networks; in the template form, a later row's choice follows a row above it as that
// row becomes a network and is renamed, without losing what was typed into the later row.
func TestBrowser_ZoneRefersFollowTheMembersBefore(t *testing.T) {
	t.Parallel()
	a := startApp(t)
	ids := a.simcloudComponents(t)
	admin := newSession(t, newBrowser(t), a)
	admin.signIn(adminEmail, adminPassword)
	zone := admin.createZone("sim-refers")
	offered := func(sel string) string {
		t.Helper()
		return eval[string](admin, `[...document.querySelector(`+jsString(sel)+`).options].map(o => o.value).join('|')`)
	}

	admin.pickComponent("#f-component_id", ids["simcloud-network"], `#f-p\.cidr`)
	admin.fill("#f-service-name", "core")
	admin.fill(`#f-p\.name`, "core")
	if status := admin.submit(`[data-testid="service-form"]`); status != 200 {
		t.Fatalf("adding the network service: %d: %s", status, admin.text(".stack"))
	}
	admin.pickComponent("#f-component_id", ids["simcloud-machine"], `#f-refers\.network_id`)
	if got := offered(`#f-refers\.network_id`); got != "|core" {
		t.Fatalf("a machine service's network offers %q, want the zone's network core", got)
	}

	field := func(i int, name string) string { return fmt.Sprintf(`#f-mandatory_components\[%d\]\.%s`, i, name) }
	admin.open(zone)
	admin.pickComponent(field(0, "component_id"), ids["simcloud-machine"], field(0, `p\.cores`))
	admin.fill(field(0, "name"), "web")
	admin.pickComponent(field(1, "component_id"), ids["simcloud-machine"], field(1, `p\.cores`))
	admin.fill(field(1, "name"), "db")
	admin.fill(field(1, `p\.cores`), "3")
	if got := offered(field(1, `refers\.network_id`)); got != "" {
		t.Fatalf("the second machine's network offers %q while nothing above is a network", got)
	}

	// The first row becomes a network: the second row's choice offers it at once.
	admin.pickComponent(field(0, "component_id"), ids["simcloud-network"], field(0, `p\.cidr`))
	admin.waitFor(`[...document.querySelector(` + jsString(field(1, `refers\.network_id`)) + `).options].some(o => o.value === 'web')`)
	// Renamed, and left for its next field as a person would, it is offered by its new name.
	admin.retype(field(0, "name"), "core")
	if err := chromedp.Do(admin.ctx, chromedp.KeyEvent(kb.Tab)); err != nil {
		t.Fatal(err)
	}
	admin.waitFor(`[...document.querySelector(` + jsString(field(1, `refers\.network_id`)) + `).options].map(o => o.value).join('|') === '|core'`)
	admin.settled()
	if got := eval[string](admin, `document.querySelector(`+jsString(field(1, `p\.cores`))+`).value`); got != "3" {
		t.Fatalf("the second row's cores is %q after the rows above changed, want what was typed", got)
	}
	admin.fill(field(0, `p\.name`), "core")
	admin.selectOption(field(1, `refers\.network_id`), "core")
	admin.fill("#f-template-name", "linked")
	if status := admin.submit(`[data-testid="template-form"]`); status != 200 {
		t.Fatalf("adding the template: %d: %s", status, admin.text(".stack"))
	}
	if got := admin.text(`[data-testid="template-linked-db"] [data-key="network_id"]`); got != "output of core" {
		t.Fatalf("db's network shows as %q, want the network core's output", got)
	}
}
