package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"nimbus/app/kernel/access"
)

// TestBrowser_LandingZoneEnvironmentLifecycle: a provider admin builds a landing zone for the
// simulated cloud on its pages (a pool, naming, a system service, a template of two machines,
// an approval policy on destroy) and publishes it; a tenant admin opens an environment from
// the template and watches it become active; their destroy waits until a second admin
// approves it; decommissioning the environment (its destroy approved too) and retiring the
// zone leave the pool and the simulated cloud empty.
func TestBrowser_LandingZoneEnvironmentLifecycle(t *testing.T) {
	t.Parallel()
	a := startApp(t)
	ids := a.simcloudComponents(t)
	acme := a.createTenant(t, "acme")
	a.addMember(t, "lead@acme.test", acme.ID, access.TenantAdmin)
	a.addMember(t, "ops@acme.test", acme.ID, access.TenantAdmin)
	browser := newBrowser(t)
	start := time.Now()
	phase := func(name string) { t.Logf("%6.1fs %s", time.Since(start).Seconds(), name) }

	admin := newSession(t, browser, a)
	admin.signIn(adminEmail, adminPassword)
	zonePage := admin.createZone("sim-eu")

	admin.fill("#f-pool-name", "eu-net")
	admin.fill("#f-pool-prefix", "10.70.0.0/24")
	if status := admin.submit(`[data-testid="zone-pool-form"]`); status != 200 || !strings.HasPrefix(admin.path(), "/ipam/pools/") {
		t.Fatalf("adding the pool: %d on %s", status, admin.path())
	}
	pool := strings.TrimPrefix(admin.path(), "/ipam/pools/")

	admin.open(zonePage + "/resolvers")
	admin.choose("#f-pool_id", pool)
	admin.fill("#f-subnet_bits", "28")
	admin.submit(`[data-testid="resolver-form-ipam"]`)
	admin.fill("#f-pattern", "{tenant}-{env}-{seq:02d}")
	admin.waitFor(`document.getElementById('next-name').textContent === 'tenant-env-01'`)
	admin.submit(`[data-testid="resolver-form-naming"]`)

	admin.open(zonePage)
	admin.pickComponent("#f-component_id", ids["simcloud-network"], `#f-p\.name`)
	admin.fill("#f-service-name", "core")
	admin.fill(`#f-p\.name`, "core-net")
	admin.submit(`[data-testid="service-form"]`)
	admin.fill("#f-template-name", "standard")
	for i, name := range []string{"web", "db"} {
		admin.pickComponent(fmt.Sprintf(`#f-mandatory_components\[%d\]\.component_id`, i), ids["simcloud-machine"], fmt.Sprintf(`#f-mandatory_components\[%d\]\.p\.cores`, i))
		admin.fill(fmt.Sprintf(`[name="mandatory_components[%d].name"]`, i), name)
	}
	admin.fill(`[name="mandatory_components[1].p.cores"]`, "2")
	if status := admin.submit(`[data-testid="template-form"]`); status != 200 {
		t.Fatalf("adding the template: %d: %s", status, admin.text(".stack"))
	}
	if got := admin.rows("template-standard"); len(got) != 2 || got[0][0] != "web" || got[1][0] != "db" {
		t.Fatalf("the template lists %v", got)
	}
	admin.click(`[data-testid="zone-policies"]`)
	admin.across(`location.pathname === '/approval-policies' && document.readyState === 'complete'`, time.Minute)
	if got := eval[string](admin, `document.getElementById('f-scope_id').selectedOptions[0].textContent`); got != "sim-eu" {
		t.Fatalf("the policy form starts at %q, want the zone", got)
	}
	if status := admin.submit(`[data-testid="policy-form"]`); status != 200 {
		t.Fatalf("creating the policy: %d", status)
	}
	admin.open(zonePage)
	admin.submit(`form[action$="/publish"]`)
	admin.across(`document.querySelector('[data-testid="system-status"]')?.textContent === 'active'`, 90*time.Second)
	if got := admin.text(`[data-testid="service-status-core"]`); got != "deployed" {
		t.Fatalf("the system service is %s", got)
	}
	admin.screenshot("landing-zone")
	phase("zone published")

	lead := newSession(t, browser, a)
	lead.signIn("lead@acme.test", userPassword)
	lead.open("/environments")
	lead.choose("#f-tenant_id", acme.ID.String())
	lead.fill("#f-name", "dev")
	lead.choose("#f-template_id", eval[string](lead, `[...document.querySelectorAll('#f-template_id option')].find(o => o.textContent === 'sim-eu / standard').value`))
	if status := lead.submit(`[data-testid="environment-form"]`); status != 200 || !strings.HasPrefix(lead.path(), "/environments/") {
		t.Fatalf("opening the environment: %d on %s", status, lead.path())
	}
	envPage := lead.path()
	// The page follows the provisioning by itself.
	lead.across(`document.querySelector('[data-testid="environment-status"]')?.textContent === 'active'`, 120*time.Second)
	deployments := lead.rows("environment-deployments")
	if len(deployments) != 2 || deployments[0][2] != "deployed" || deployments[1][2] != "deployed" {
		t.Fatalf("the environment's deployments: %v", deployments)
	}
	var names []string
	for _, row := range lead.rows("environment-names") {
		names = append(names, row[0])
	}
	if slices.Sort(names); strings.Join(names, " ") != "acme-dev-01 acme-dev-02" {
		t.Fatalf("the names issued: %v", names)
	}
	if got := lead.rows("environment-addresses"); len(got) != 2 {
		t.Fatalf("the addresses in use: %v", got)
	}
	lead.screenshot("environment-active")
	// The dashboard answers at a glance.
	lead.open("/")
	if got := lead.text(`[data-testid="dashboard-environments"]`); !strings.Contains(got, "acme / dev") || !strings.Contains(got, "active") {
		t.Fatalf("the dashboard's environments: %q", got)
	}
	admin.open("/")
	if got := admin.text(`[data-testid="dashboard-pools"]`); !strings.Contains(got, "eu-net") || !strings.Contains(got, "landing zone sim-eu") {
		t.Fatalf("the dashboard's pools: %q", got)
	}
	admin.screenshot("dashboard")
	phase("environment active")

	// A destroy in the zone waits for another admin's approval.
	ops := newSession(t, browser, a)
	ops.signIn("ops@acme.test", userPassword)
	lead.open(envPage)
	lead.click(`a[href^="/deployments/"]:not([href$="/"])`)
	lead.across(`location.pathname.startsWith('/deployments/') && document.readyState === 'complete'`, time.Minute)
	name := lead.text(`h1`)
	name = strings.Fields(name)[0]
	lead.fill(`[data-testid="destroy-form"] input[name="confirm"]`, name)
	lead.submitButton(`[data-testid="destroy-form"] button`)
	lead.across(`document.querySelector('[data-testid="operation-live"]')?.dataset.status === 'awaiting_approval'`, 60*time.Second)
	approveAll(t, a, ops, 1)
	lead.waitOperation("succeeded")
	phase("destroy approved")

	lead.open(envPage)
	lead.fill("#f-confirm", "dev")
	lead.submit(`[data-testid="decommission-form"]`)
	approveAll(t, a, ops, 1)
	lead.across(`document.querySelector('[data-testid="environment-status"]')?.textContent === 'decommissioned'`, 120*time.Second)
	if got := lead.rows("environment-addresses"); len(got) != 1 || !strings.Contains(got[0][0], "None") {
		t.Fatalf("addresses after decommissioning: %v", got)
	}

	phase("environment decommissioned")
	admin.open(zonePage)
	admin.fill("#f-confirm", "sim-eu")
	admin.submit(`[data-testid="retire-form"]`)
	admin.across(`document.querySelector('[data-testid="system-status"]')?.textContent === 'decommissioned'`, 90*time.Second)
	if got := admin.text(`[data-testid="zone-status"]`); got != "retired" {
		t.Fatalf("the zone is %s", got)
	}
	if n := allocations(t, a, pool); n != 0 {
		t.Fatalf("%d allocations left in the pool", n)
	}
	if left := cloudFiles(t, a); len(left) != 0 {
		t.Fatalf("left in the simulated cloud: %v", left)
	}
}

// approveAll approves, on their pages, n approval requests that wait for the session's user.
// A request opens only once its operation's preview has ended, which on a busy machine is a
// while after whatever asked for it: the wait asks the API, as a script would, until one waits
// for the user, so that a failure tells a request that never came from a page that hides it.
func approveAll(t *testing.T, a *app, s *session, n int) {
	t.Helper()
	approver := s.text(`[data-testid="whoami"]`)
	token := a.token(t, approver)
	type request struct {
		Kind       string `json:"kind"`
		Deployment string `json:"deployment"`
		CanDecide  bool   `json:"can_decide"`
	}
	const link = `[data-testid="approvals-waiting"] tbody a`
	for range n {
		var pending struct {
			Approvals []request `json:"approvals"`
		}
		if !pollUntil(engineWait, func() bool {
			apiGet(t, a.url+"/api/v1/approvals?status=pending", token, &pending)
			return slices.ContainsFunc(pending.Approvals, func(r request) bool { return r.CanDecide })
		}) {
			t.Fatalf("no approval request waits for %s after %s; pending: %+v", approver, engineWait, pending.Approvals)
		}
		s.open("/approvals")
		if !s.exists(link) {
			t.Fatalf("the API has %+v waiting for %s, and the approvals page lists %q", pending.Approvals, approver, s.rows("approvals-waiting"))
		}
		s.click(link)
		s.across(`location.pathname.startsWith('/approvals/') && document.readyState === 'complete'`, time.Minute)
		s.fill("#f-comment", "approved in the test")
		if status := s.submit(`[data-testid="decide-form"]`); status != 200 {
			t.Fatalf("approving: %d", status)
		}
		if got := s.text(`[data-testid="approval-status"]`); got != "approved" {
			t.Fatalf("after approving the request is %q", got)
		}
	}
}
