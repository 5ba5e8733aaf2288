package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"nimbus/app/kernel/access"
)

func TestBrowser_AdminOnboardsTenant(t *testing.T) {
	t.Parallel()
	a := startApp(t)
	admin := newSession(t, newBrowser(t), a)
	admin.signIn(adminEmail, adminPassword)

	admin.open("/tenants")
	admin.fill("#f-name", "Acme")
	if status := admin.submit(`form[action="/tenants"]`); status != 200 {
		t.Fatalf("create tenant: status %d, want 200 after the redirect", status)
	}
	if h1 := admin.text("h1"); h1 != "Acme" {
		t.Fatalf("after creating a tenant the page is %q, want the new tenant's page", h1)
	}
	tenantPage := admin.path()

	const member = "ops@acme.example"
	admin.open("/users")
	admin.fill("#f-email", member)
	admin.fill("#f-password", userPassword)
	if status := admin.submit(`form[action="/users"]`); status != 200 {
		t.Fatalf("create user: status %d, want 200; field errors: %q", status, admin.fieldError("email")+admin.fieldError("password"))
	}
	if emails := column(admin.rows("users"), 0); !slices.Contains(emails, member) {
		t.Fatalf("users table lists %q, want %s in it", emails, member)
	}

	admin.open(tenantPage)
	admin.fill("#f-email", member)
	admin.choose("#f-role", string(access.TenantAdmin))
	if status := admin.submit(`form[action$="/members"]`); status != 200 {
		t.Fatalf("add member: status %d, want 200; field error: %q", status, admin.fieldError("email"))
	}
	if row := rowWith(admin.rows("members"), member); row == nil || row[1] != "Tenant admin" {
		t.Fatalf("members table has %q for %s, want the role Tenant admin", row, member)
	}

	admin.open("/tokens")
	admin.fill("#f-name", "onboarding script")
	if status := admin.submit(`form[action="/tokens"]`); status != 201 {
		t.Fatalf("create token: status %d, want 201", status)
	}
	token := admin.text(`[data-testid="new-token"]`)
	if token == "" {
		t.Fatal("the new token's secret is empty")
	}

	var me struct {
		Email         string `json:"email"`
		ProviderAdmin bool   `json:"provider_admin"`
	}
	apiGet(t, a.url+"/api/v1/me", token, &me)
	if me.Email != adminEmail || !me.ProviderAdmin {
		t.Fatalf("the token acts as %+v, want the provider admin %s", me, adminEmail)
	}
	var list struct {
		Tenants []struct {
			Name        string `json:"name"`
			MemberCount int    `json:"member_count"`
		} `json:"tenants"`
	}
	apiGet(t, a.url+"/api/v1/tenants", token, &list)
	if len(list.Tenants) != 1 || list.Tenants[0].Name != "Acme" || list.Tenants[0].MemberCount != 1 {
		t.Fatalf("GET /api/v1/tenants lists %+v, want Acme with 1 member", list.Tenants)
	}

	admin.open("/audit")
	actions := column(admin.rows("audit"), 2)
	for _, want := range []string{"tenant.create", "user.create", "membership.create"} {
		if !slices.Contains(actions, want) {
			t.Errorf("audit log shows %q, want %s in it", actions, want)
		}
	}

	// The jobs UI is River's own single-page app, fed by the job client the harness starts,
	// framed by a Nimbus page; it has rendered once it lists the job states.
	if status := admin.open("/admin/jobs"); status != 200 {
		t.Fatalf("/admin/jobs answers %d to the provider admin, want 200", status)
	}
	admin.waitWithin(`document.querySelector('[data-testid="jobs-frame"]').contentDocument?.body.innerText.includes('Completed') ?? false`, 30*time.Second)
}

func TestBrowser_TenantAdminSeesOnlyOwnTenant(t *testing.T) {
	t.Parallel()
	a := startApp(t)
	alpha, beta := a.createTenant(t, "Alpha Corp"), a.createTenant(t, "Beta Corp")
	const boss = "boss@alpha.example"
	a.addMember(t, boss, alpha.ID, access.TenantAdmin)
	a.addMember(t, "dev@alpha.example", alpha.ID, access.User)
	a.addMember(t, "dev@beta.example", beta.ID, access.User)

	s := newSession(t, newBrowser(t), a)
	s.signIn(boss, userPassword)

	s.open("/tenants")
	if names := column(s.rows("tenants"), 0); !slices.Equal(names, []string{"Alpha Corp"}) {
		t.Errorf("tenants table lists %q, want only Alpha Corp", names)
	}

	// Another tenant's page must look exactly like one that does not exist.
	if status := s.open("/tenants/" + beta.ID.String()); status != 404 {
		t.Errorf("Beta's page answers %d, want 404", status)
	}
	if code := s.text(".error-code"); code != "404" {
		t.Errorf("Beta's page shows error code %q, want 404", code)
	}
	if body := eval[string](s, `document.body.textContent`); strings.Contains(body, "Beta Corp") {
		t.Errorf("the 404 page names the tenant: %q", body)
	}

	s.open("/users")
	want := []string{boss, "dev@alpha.example"}
	if emails := column(s.rows("users"), 0); !slices.Equal(emails, want) {
		t.Errorf("users table lists %q, want only Alpha's members %q", emails, want)
	}

	for _, path := range []string{"/admin/system", "/admin/jobs"} {
		if status := s.open(path); status != 403 {
			t.Errorf("%s answers %d, want 403", path, status)
		}
		if code := s.text(".error-code"); code != "403" {
			t.Errorf("%s shows error code %q, want 403", path, code)
		}
	}

	s.open("/")
	links := eval[[]string](s, `[...document.querySelectorAll('nav a')].map(a => a.textContent.trim())`)
	if !slices.Contains(links, "Users") || !slices.Contains(links, "Audit log") {
		t.Errorf("navigation %q lacks Users or Audit log, which a tenant admin may use", links)
	}
	if slices.Contains(links, "System") || slices.Contains(links, "Jobs") {
		t.Errorf("navigation %q offers System or Jobs to a tenant admin", links)
	}
}

func TestBrowser_FormErrorsShowBesideField(t *testing.T) {
	t.Parallel()
	a := startApp(t)
	a.createTenant(t, "Acme")
	browser := newBrowser(t)

	visitor := newSession(t, browser, a)
	visitor.open("/login")
	visitor.fill("#f-email", adminEmail)
	visitor.fill("#f-password", "not the password at all")
	if status := visitor.submit(`form[action="/login"]`); status != 422 {
		t.Errorf("wrong password: status %d, want 422", status)
	}
	if msg := visitor.fieldError("password"); msg != "the email or password is wrong" {
		t.Errorf("wrong password: the password field says %q", msg)
	}

	admin := newSession(t, browser, a)
	admin.signIn(adminEmail, adminPassword)
	dialogs := admin.dialogs()

	// The browser would refuse an empty name by itself; the server's own check is under test.
	admin.open("/tenants")
	if err := chromedp.Do(admin.ctx, chromedp.RemoveAttribute(chromedp.CSS("#f-name"), "required")); err != nil {
		t.Fatal(err)
	}
	admin.fill("#f-name", "   ")
	if status := admin.submit(`form[action="/tenants"]`); status != 422 {
		t.Errorf("blank name: status %d, want 422", status)
	}
	if msg := admin.fieldError("name"); msg != "enter a name" {
		t.Errorf("blank name: the name field says %q, want %q", msg, "enter a name")
	}

	admin.open("/tenants")
	admin.fill("#f-name", "Acme")
	if status := admin.submit(`form[action="/tenants"]`); status != 422 {
		t.Errorf("duplicate name: status %d, want 422", status)
	}
	if msg := admin.fieldError("name"); !strings.Contains(msg, "already exists") {
		t.Errorf("duplicate name: the name field says %q, want it to say the name already exists", msg)
	}
	if value := eval[string](admin, `document.getElementById('f-name').value`); value != "Acme" {
		t.Errorf("duplicate name: the form lost what was typed, it holds %q", value)
	}

	const markup = `<script>alert(1)</script><img src=x onerror=alert(2)>`
	admin.open("/tenants")
	admin.fill("#f-name", markup)
	if status := admin.submit(`form[action="/tenants"]`); status != 200 {
		t.Fatalf("markup name: status %d, want 200; field error %q", status, admin.fieldError("name"))
	}
	if h1 := admin.text("h1"); h1 != markup {
		t.Errorf("tenant page heading is %q, want the name shown literally as %q", h1, markup)
	}
	if flash := admin.text(".flash"); !strings.Contains(flash, markup) {
		t.Errorf("flash %q does not show the name literally", flash)
	}
	admin.open("/tenants")
	if names := column(admin.rows("tenants"), 0); !slices.Contains(names, markup) {
		t.Errorf("tenants table lists %q, want the name shown literally", names)
	}
	if n := eval[int](admin, `document.querySelectorAll('main script, main img').length`); n != 0 {
		t.Errorf("the name became %d element(s) on the tenants page", n)
	}
	if seen := dialogs(); len(seen) > 0 {
		t.Errorf("the page ran the tenant name as script: dialogs %q", seen)
	}
}

func TestBrowser_ThemeToggleAndOfflineAssets(t *testing.T) {
	t.Parallel()
	a := startApp(t)
	acme := a.createTenant(t, "Acme")
	a.addMember(t, "ops@acme.example", acme.ID, access.TenantAdmin)
	a.addMember(t, "dev@acme.example", acme.ID, access.User)
	a.addMember(t, "auditor@acme.example", acme.ID, access.ReadOnly)

	s := newSession(t, newBrowser(t), a)
	s.signIn(adminEmail, adminPassword)

	if !eval[bool](s, `typeof htmx !== 'undefined'`) {
		t.Error("htmx did not load from /static/vendor/htmx.min.js")
	}
	if !eval[bool](s, `[...document.styleSheets].some(c => c.href?.endsWith('/static/css/app.css') && c.cssRules.length > 0)`) {
		t.Error("app.css did not load")
	}
	// Nimbus runs where there may be no internet: everything must come from the server itself.
	if foreign := eval[[]string](s, `performance.getEntriesByType('resource').map(e => e.name).filter(u => !u.startsWith(location.origin + '/'))`); len(foreign) > 0 {
		t.Errorf("the dashboard loads resources from elsewhere: %q", foreign)
	}

	// Headless Chromium prefers light, so with no choice stored the page follows that.
	const theme = `document.documentElement.dataset.theme`
	const background = `getComputedStyle(document.body).backgroundColor`
	if got := eval[string](s, theme+` ?? ''`); got != "" {
		t.Errorf("theme before any choice is %q, want none (follow the system)", got)
	}
	light := eval[string](s, background)
	s.click(".theme-toggle")
	s.waitFor(theme + ` === 'dark'`)
	if dark := eval[string](s, background); dark == light {
		t.Errorf("the dark theme left the background %s", dark)
	}

	// The choice is remembered on the next pages.
	s.open("/")
	s.waitFor(theme + ` === 'dark'`)
	s.screenshot("dashboard-dark")
	s.open("/tenants/" + acme.ID.String())
	s.waitFor(theme + ` === 'dark'`)
	s.screenshot("tenant-dark")

	s.click(".theme-toggle")
	s.waitFor(theme + ` === 'light'`)
	if got := eval[string](s, background); got != light {
		t.Errorf("back in the light theme the background is %s, want %s", got, light)
	}
	s.open("/tenants/" + acme.ID.String())
	s.waitFor(theme + ` === 'light'`)
	s.screenshot("tenant-light")
	s.open("/")
	s.waitFor(theme + ` === 'light'`)
	s.screenshot("dashboard-light")
}
