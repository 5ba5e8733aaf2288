package e2e

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestBrowser_ProviderAdminsFirstHour is a new install as its first provider admin meets it:
// the dashboard says what to do first and ticks each step off; a user joins a tenant from
// the form that creates them, and the users list says their role; a tenant is renamed, kept
// while it holds people, and deleted once empty; the lists sort by their columns; the audit
// log shows changes as keys and values and links what they changed by name; the jobs view
// opens inside Nimbus's frame.
func TestBrowser_ProviderAdminsFirstHour(t *testing.T) {
	t.Parallel()
	a := startApp(t)
	admin := newSession(t, newBrowser(t), a)
	admin.signIn(adminEmail, adminPassword)

	// A fresh install: every step to do, each a link to where it is done.
	steps := func() map[string]string {
		return eval[map[string]string](admin, `Object.fromEntries([...document.querySelectorAll('[data-testid="first-steps"] [data-step]')]
			.map(li => [li.dataset.step, li.dataset.done === 'true' ? 'done' : li.querySelector('a')?.getAttribute('href') ?? 'no link']))`)
	}
	want := map[string]string{"tenant": "/tenants", "member": "/users", "zone": "/landing-zones", "pool": "/ipam", "environment": "/environments", "deployment": "/catalog"}
	if got := steps(); !maps.Equal(got, want) {
		t.Fatalf("a fresh install's first steps: %v, want %v", got, want)
	}
	admin.screenshot("dashboard-first-steps")

	// Tenants, created from the form below the list.
	admin.open("/tenants")
	if eval[bool](admin, `!!(document.querySelector('[data-testid="tenants"]').compareDocumentPosition(document.querySelector('[data-testid="tenant-form"]')) & Node.DOCUMENT_POSITION_FOLLOWING)`) == false {
		t.Error("the new-tenant form comes before the list")
	}
	for _, name := range []string{"Acme", "beta", "Gamma"} {
		admin.open("/tenants")
		admin.fill("#f-name", name)
		if status := admin.submit(`[data-testid="tenant-form"]`); status != 200 {
			t.Fatalf("create tenant %s: status %d", name, status)
		}
	}
	if got := eval[string](admin, `document.querySelector('[data-testid="breadcrumbs"] a')?.getAttribute('href') ?? ''`); got != "/tenants" {
		t.Errorf("the tenant page's breadcrumbs lead to %q, want the list of tenants", got)
	}
	gamma := admin.path()
	admin.open("/tenants")
	if got := column(admin.rows("tenants"), 0); !slices.Equal(got, []string{"Acme", "beta", "Gamma"}) {
		t.Fatalf("tenants by name: %q", got)
	}
	admin.follow(`[data-testid="tenants"] a[data-sort="name"]`)
	if got := column(admin.rows("tenants"), 0); !slices.Equal(got, []string{"Gamma", "beta", "Acme"}) {
		t.Fatalf("tenants by name, reversed: %q", got)
	}
	// Dates read relative, the exact time on hover.
	if got := eval[string](admin, `document.querySelector('[data-testid="tenants"] time')?.title ?? ''`); !strings.HasSuffix(got, " UTC") {
		t.Errorf("a tenant's creation time has the title %q, want the exact time in UTC", got)
	}
	if got := admin.text(`[data-testid="tenants"] time`); got != "just now" {
		t.Errorf("a tenant created now reads %q", got)
	}
	acme := eval[string](admin, `[...document.querySelectorAll('[data-testid="tenants"] a')].find(a => a.textContent === 'Acme').getAttribute('href')`)

	// A user who joins Acme as they are created, and one in no tenant.
	admin.open("/users")
	admin.fill("#f-email", "ops@acme.test")
	admin.fill("#f-password", userPassword)
	admin.choose("#f-tenant_id", strings.TrimPrefix(acme, "/tenants/"))
	admin.choose("#f-role", "tenant_admin")
	if status := admin.submit(`[data-testid="user-form"]`); status != 200 {
		t.Fatalf("create a user in Acme: status %d; %q", status, admin.fieldError("tenant_id")+admin.fieldError("role")+admin.fieldError("email"))
	}
	admin.fill("#f-email", "loner@example.com")
	admin.fill("#f-password", userPassword)
	if status := admin.submit(`[data-testid="user-form"]`); status != 200 {
		t.Fatalf("create a user in no tenant: status %d", status)
	}
	roles := map[string]string{}
	for _, r := range admin.rows("users") {
		roles[r[0]] = r[1]
	}
	if roles["ops@acme.test"] != "Acme: Tenant admin" || roles[adminEmail] != "Provider admin" || roles["loner@example.com"] != "No tenant yet" {
		t.Fatalf("the users' roles: %q", roles)
	}
	admin.follow(`[data-testid="users"] a[data-sort="email"]`)
	if got := column(admin.rows("users"), 0); !slices.Equal(got, []string{"ops@acme.test", "loner@example.com", adminEmail}) {
		t.Fatalf("users by email, reversed: %q", got)
	}
	admin.screenshot("users")

	admin.open("/")
	if got := steps(); got["tenant"] != "done" || got["member"] != "done" || got["environment"] != "/environments" {
		t.Fatalf("after a tenant and a member the first steps are %v", got)
	}

	// Renamed; a name another tenant has is refused beside the field.
	admin.open(acme)
	admin.eval(`document.querySelector('[data-testid="rename-form"] #f-name').value = ''`)
	admin.fill(`[data-testid="rename-form"] #f-name`, "beta")
	if status := admin.submit(`[data-testid="rename-form"]`); status != 422 {
		t.Fatalf("renaming Acme to beta: status %d, want 422", status)
	}
	if got := admin.fieldError("name"); !strings.Contains(got, "already exists") {
		t.Fatalf("renaming to a taken name says %q", got)
	}
	admin.eval(`document.querySelector('[data-testid="rename-form"] #f-name').value = ''`)
	admin.fill(`[data-testid="rename-form"] #f-name`, "Acme Corp")
	if status := admin.submit(`[data-testid="rename-form"]`); status != 200 {
		t.Fatalf("renaming Acme: status %d", status)
	}
	if got := admin.text("h1"); got != "Acme Corp" {
		t.Fatalf("after the rename the page's title is %q", got)
	}

	// Deleting asks first; a tenant with people in it stays, saying why.
	seen := admin.dialogs()
	admin.click(`[data-testid="delete-tenant-form"] [type="submit"]`)
	if got := seen(); len(got) != 1 || !strings.Contains(got[0], "Delete the tenant Acme Corp?") {
		t.Fatalf("deleting asked %q", got)
	}
	if admin.path() != acme {
		t.Fatalf("a dismissed deletion left the page for %s", admin.path())
	}
	admin.eval(`window.confirm = () => true`)
	if status := admin.submit(`[data-testid="delete-tenant-form"]`); status != 200 {
		t.Fatalf("deleting Acme Corp: status %d", status)
	}
	if got := admin.text(".flash p"); got != "Not deleted: Acme Corp still has 1 member: remove them first." {
		t.Fatalf("deleting a tenant with a member says %q", got)
	}
	admin.open(gamma)
	admin.eval(`window.confirm = () => true`)
	if status := admin.submit(`[data-testid="delete-tenant-form"]`); status != 200 {
		t.Fatalf("deleting Gamma: status %d", status)
	}
	if admin.path() != "/tenants" || slices.Contains(column(admin.rows("tenants"), 0), "Gamma") {
		t.Fatalf("after deleting Gamma: on %s, listing %q", admin.path(), column(admin.rows("tenants"), 0))
	}

	// The audit log: what changed as keys and values, the target named and linked.
	admin.open("/audit?action=tenant.rename")
	rows := admin.rows("audit")
	if len(rows) != 1 {
		t.Fatalf("the renames in the log: %q", rows)
	}
	if got := admin.text(`[data-testid="audit-target"] a`); got != "Acme Corp" {
		t.Errorf("the rename's target reads %q", got)
	}
	if got := eval[string](admin, `document.querySelector('[data-testid="audit-target"] a').getAttribute('href')`); got != acme {
		t.Errorf("the rename's target links to %q, want %s", got, acme)
	}
	change := eval[map[string]string](admin, `Object.fromEntries([...document.querySelectorAll('[data-testid="audit-change"] dd')].map(d => [d.previousElementSibling.textContent, d.textContent]))`)
	if change["name"] != "Acme Corp" || change["previous name"] != "Acme" {
		t.Errorf("the rename's change reads %v", change)
	}
	admin.open("/audit?action=tenant.delete")
	if got, links := admin.text(`[data-testid="audit-target"]`), eval[int](admin, `document.querySelectorAll('[data-testid="audit-target"] a').length`); got != "tenant Gamma (deleted)" || links != 0 {
		t.Errorf("the deleted tenant's target reads %q with %d links", got, links)
	}
	admin.open("/audit")
	if text := admin.text(`[data-testid="audit"]`); strings.ContainsAny(text, "{}") {
		t.Errorf("the audit log shows JSON: %.300s", text)
	}
	if got := eval[string](admin, `[...document.querySelectorAll('[data-testid="audit"] tbody tr')].find(r => r.textContent.includes('membership.create'))?.querySelector('[data-testid="audit-target"] a')?.textContent ?? ''`); got != "Acme Corp: ops@acme.test" {
		t.Errorf("the membership's target reads %q", got)
	}
	admin.screenshot("audit")

	// The jobs view, inside Nimbus's page under a bar that leads back.
	admin.open("/admin/jobs")
	admin.waitWithin(`document.querySelector('[data-testid="jobs-frame"]').contentDocument?.body.innerText.includes('Completed') ?? false`, 30*time.Second)
	admin.screenshot("jobs")
	admin.follow(`[data-testid="back-to-nimbus"]`)
	if admin.path() != "/" {
		t.Fatalf("back from the jobs view lands on %s", admin.path())
	}
}

// eval runs js in the page for its effect.
func (s *session) eval(js string) {
	s.t.Helper()
	eval[any](s, "("+js+", null)")
}
