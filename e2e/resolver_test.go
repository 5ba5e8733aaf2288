package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"nimbus/app/domain/component"
	"nimbus/app/kernel/access"
	"nimbus/app/orchestration/environment"
)

// TestBrowser_ResolversAndGovernance: a provider admin sets up an IPAM pool, a naming pattern
// and an image, and a governance rule for a tenant; the tenant's user deploys the machine,
// whose name and address the resolvers fill, until the rule says no.
func TestBrowser_ResolversAndGovernance(t *testing.T) {
	t.Parallel()
	a := startApp(t)
	ctx := context.Background()
	if _, err := component.EnsureBuiltins(ctx, component.NewService(a.pool, nil, nil)); err != nil {
		t.Fatal(err)
	}
	acme := a.createTenant(t, "acme")
	a.addMember(t, "dev@acme.test", acme.ID, access.User)
	env, err := environment.NewService(a.pool).Create(ctx, a.principal(t, adminEmail), acme.ID, "dev")
	if err != nil {
		t.Fatal(err)
	}
	var machineID string
	if err := a.pool.QueryRow(ctx, `SELECT id::text FROM components WHERE name = 'simcloud-machine'`).Scan(&machineID); err != nil {
		t.Fatal(err)
	}
	browser := newBrowser(t)

	admin := newSession(t, browser, a)
	admin.signIn(adminEmail, adminPassword)
	admin.open("/ipam")
	admin.choose(`#f-scope`, "environment:"+env.ID.String())
	admin.fill(`#f-name`, "dev-net")
	admin.fill(`#f-prefix`, "10.50.0.0/29")
	if status := admin.submit(`[data-testid="pool-form"]`); status != 200 || !strings.HasPrefix(admin.path(), "/ipam/pools/") {
		t.Fatalf("adding the pool: %d on %s", status, admin.path())
	}
	pool := strings.TrimPrefix(admin.path(), "/ipam/pools/")

	resolvers := "/environments/" + env.ID.String() + "/resolvers"
	admin.open(resolvers)
	admin.choose(`#f-pool_id`, pool)
	admin.submit(`[data-testid="resolver-form-ipam"]`)
	admin.fill(`#f-pattern`, "{tenant}-{env}-{seq:02d}")
	admin.waitFor(`document.getElementById('next-name').textContent === 'acme-dev-01'`)
	admin.fill(`#f-domain`, "dev.acme.test")
	admin.submit(`[data-testid="resolver-form-naming"]`)
	if got := admin.text(`[data-testid="configured-naming"]`) + admin.text(`[data-testid="configured-ipam"]`); got != "configuredconfigured" {
		t.Fatalf("after saving both: %q", got)
	}
	admin.screenshot("environment-resolvers")

	admin.open("/images")
	admin.choose(`#f-provider`, "simcloud")
	admin.fill(`#f-os_family`, "alpine")
	admin.fill(`#f-os_version`, "3.20")
	admin.fill(`#f-image_id`, "alpine-3.20")
	admin.submit(`[data-testid="image-form"]`)
	if !strings.Contains(admin.text(`[data-testid="images"]`), "alpine-3.20") {
		t.Fatal("the new image is not in the catalog")
	}

	admin.open("/tenants/" + acme.ID.String() + "/governance/" + machineID)
	admin.fill(`[name="parameter_constraints.cores.maximum"]`, "4")
	admin.fill(`#f-max_instances`, "2")
	if status := admin.submit(`form[action$="/governance/` + machineID + `"]`); status != 200 {
		t.Fatalf("saving the rule: %d", status)
	}

	user := newSession(t, browser, a)
	user.signIn("dev@acme.test", userPassword)
	deploy := func(name string, failOn string) {
		t.Helper()
		user.open("/catalog")
		user.click(`[data-deploy="simcloud-machine"]`)
		user.waitFor(`document.getElementById('dialog').open && document.querySelector('[data-testid="deploy-form"]') !== null`)
		user.settled()
		user.fill("#f-name", name)
		if failOn != "" {
			user.choose(`#f-p\.fail_on`, failOn)
		}
		user.click(`[data-testid="deploy-form"] button[value="deploy"]`)
	}
	// The environment fills the name and the address: the dialog does not ask for them.
	user.open("/catalog")
	user.click(`[data-deploy="simcloud-machine"]`)
	user.waitFor(`document.getElementById('dialog').open && document.querySelector('[data-testid="deploy-form"]') !== null`)
	user.settled()
	if !eval[bool](user, `document.getElementById('f-p.name').disabled && document.getElementById('f-p.ip_address').disabled && !document.getElementById('f-p.cores').disabled`) {
		t.Fatal("the dialog asks for inputs the environment's resolvers fill")
	}
	if note := user.text(`[data-resolver="naming"] .resolved-note`); !strings.Contains(note, "naming resolver") {
		t.Fatalf("the name's note: %q", note)
	}
	// A deploy that fails gives its address back.
	deploy("broken", "create")
	user.across(`location.pathname.startsWith('/operations/') && document.readyState === 'complete'`, 10*time.Second)
	user.waitOperation("failed")
	if n := allocations(t, a, pool); n != 0 {
		t.Fatalf("%d allocations after the failed deploy", n)
	}
	// Two deploys get their own name and address; the failed one's address is handed out again.
	want := map[string][2]string{"one": {"acme-dev-02", "10.50.0.2"}, "two": {"acme-dev-03", "10.50.0.3"}}
	for _, name := range []string{"one", "two"} {
		deploy(name, "")
		user.across(`location.pathname.startsWith('/operations/') && document.readyState === 'complete'`, 10*time.Second)
		user.waitOperation("succeeded")
		params := user.text(`[data-testid="operation-parameters"]`)
		if !strings.Contains(params, want[name][0]) || !strings.Contains(params, want[name][1]) {
			t.Fatalf("%s was given %q, want %v", name, params, want[name])
		}
	}
	// The dialog says what the rule allows; the server says no with the rule's words.
	deploy("three", "")
	if got := user.text(`[data-testid="governance"]`); !strings.Contains(got, "0 more may be deployed") || !strings.Contains(got, "cores: at most 4") {
		t.Fatalf("the dialog's rules: %q", got)
	}
	user.waitFor(`document.querySelector('[data-testid="form-error"]') !== null`)
	user.settled()
	if got := user.text(`[data-testid="form-error"]`); !strings.Contains(got, "at most 2 are allowed") {
		t.Fatalf("a third deploy: %q", got)
	}
	eval[bool](user, `(document.getElementById('f-p.cores').removeAttribute('max'), true)`)
	user.retype(`#f-p\.cores`, "8")
	user.click(`[data-testid="deploy-form"] button[value="deploy"]`)
	user.waitFor(`document.querySelector('[data-field-error="parameters.cores"]') !== null`)
	if got := user.text(`[data-field-error="parameters.cores"]`); !strings.Contains(got, "above the maximum of 4 set by the provider") {
		t.Fatalf("cores 8: %q", got)
	}
	user.screenshot("deploy-dialog-governed")
	admin.open("/ipam/pools/" + pool)
	// The pool says which input of which deployment holds each address.
	if got := admin.rows("allocations"); len(got) != 2 || got[0][3] != "ip_address" || got[1][3] != "ip_address" || got[0][2] == "" {
		t.Fatalf("the pool's allocations: %v", got)
	}
	if got := admin.text(`[data-testid="usage"]`); !strings.HasPrefix(got, "33% used — 2 of 6 addresses") {
		t.Fatalf("the pool's usage: %q", got)
	}
	admin.screenshot("ipam-pool")
}

func allocations(t *testing.T, a *app, pool string) int {
	t.Helper()
	var n int
	if err := a.pool.QueryRow(context.Background(), `SELECT count(*) FROM ipam_allocations WHERE pool_id = $1`, pool).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
