package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"nimbus/app/component"
)

// TestBrowser_ZoneFormsAskByTheSchemaAndRefuseEarly: a provider admin gives a zone's system
// service and template their inputs in fields made from each component's inputs (an input the
// zone's naming fills shown, not asked for) and reads them back as keys and values; a template
// that sets an input a resolver would fill stops that resolver from being configured, saying
// why, instead of failing every environment later.
func TestBrowser_ZoneFormsAskByTheSchemaAndRefuseEarly(t *testing.T) {
	t.Parallel()
	a := startApp(t)
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
	admin := newSession(t, newBrowser(t), a)
	admin.signIn(adminEmail, adminPassword)
	zone := func(name string) string {
		t.Helper()
		admin.open("/landing-zones")
		admin.fill("#f-name", name)
		admin.choose("#f-provider", "simcloud")
		if status := admin.submit(`[data-testid="zone-form"]`); status != 200 || !strings.HasPrefix(admin.path(), "/landing-zones/") {
			t.Fatalf("creating zone %s: %d on %s", name, status, admin.path())
		}
		return admin.path()
	}

	eu := zone("sim-eu")
	admin.open(eu + "/resolvers")
	admin.fill("#f-pattern", "{tenant}-{env}-{seq:02d}")
	admin.submit(`[data-testid="resolver-form-naming"]`)

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
	if got := eval[string](admin, `[...document.querySelectorAll('[data-testid="breadcrumbs"] a')].map(a => a.textContent + ' ' + a.pathname).join(', ')`); got != "IP pools /ipam, landing zone sim-eu "+eu {
		t.Fatalf("the pool's breadcrumbs: %q", got)
	}

	// Where naming is not configured the template may name its machine; naming is then refused
	// for the zone, saying which template stands in the way.
	late := zone("sim-late")
	admin.fill("#f-template-name", "fixed")
	admin.pickComponent(`#f-mandatory_components\[0\]\.component_id`, ids["simcloud-machine"], row(0, "name"))
	admin.fill(`[name="mandatory_components[0].name"]`, "web")
	admin.fill(row(0, "name"), "web")
	if status := admin.submit(`[data-testid="template-form"]`); status != 200 {
		t.Fatalf("adding the template: %d: %s", status, admin.text(".stack"))
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

// pickComponent chooses a component in a zone form's row as a person would, and waits for its
// inputs' fields to come, field among them.
func (s *session) pickComponent(sel, id, field string) {
	s.t.Helper()
	s.choose(sel, id)
	eval[bool](s, `(document.querySelector(`+jsString(sel)+`).dispatchEvent(new Event('change', {bubbles: true})), true)`)
	s.waitFor(`document.querySelector(` + jsString(field) + `) !== null`)
	s.settled()
}
