package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/domain/component"
	"nimbus/app/orchestration/environment"
)

// TestBrowser_DeploymentsListAndPagesFindTheirWay is a provider admin finding deployments of
// two tenants: outputs read as values, every tenant, environment and component is a link, the
// list sorts by a column a page at a time, searches names and finds an environment to filter
// by with a search, and the deployment and operation pages lead back through breadcrumbs, say
// what Refresh does and what to type to destroy.
func TestBrowser_DeploymentsListAndPagesFindTheirWay(t *testing.T) {
	t.Parallel()
	a := startApp(t)
	ctx := context.Background()
	if _, err := component.EnsureBuiltins(ctx, component.NewService(a.pool, nil, nil)); err != nil {
		t.Fatal(err)
	}
	admin := a.principal(t, adminEmail)
	envs := environment.NewService(a.pool)
	acme, globex := a.createTenant(t, "acme"), a.createTenant(t, "globex")
	dev, err := envs.Create(ctx, admin, acme.ID, "dev")
	if err != nil {
		t.Fatal(err)
	}
	prod, err := envs.Create(ctx, admin, globex.ID, "prod")
	if err != nil {
		t.Fatal(err)
	}
	// Recorded as operations would leave them, oldest first.
	seed := []struct {
		tenant, env       uuid.UUID
		name, status, out string
	}{
		{acme.ID, dev.ID, "web", "deployed", `{"ip_address": "10.0.0.7", "machine_id": "m-1"}`},
		{globex.ID, prod.ID, "api", "cancelled", `{}`},
		{acme.ID, dev.ID, "db", "failed", `{}`},
		{globex.ID, prod.ID, "worker", "deployed", `{"ip_address": "10.0.0.9"}`},
		{acme.ID, dev.ID, "cache", "pending", `{}`},
	}
	ids := map[string]uuid.UUID{}
	for i, d := range seed {
		var id uuid.UUID
		err := a.pool.QueryRow(ctx, `
			INSERT INTO deployed_components (tenant_id, environment_id, component_id, version, name, project, stack, status, outputs, created_at)
			SELECT $1, $2, id, 1, $3, 'simcloud-machine', $3, $4, $5, now() - make_interval(mins => $6)
			FROM components WHERE name = 'simcloud-machine' RETURNING id`, d.tenant, d.env, d.name, d.status, d.out, 10-i).Scan(&id)
		if err != nil {
			t.Fatal(err)
		}
		ids[d.name] = id
	}
	var op uuid.UUID
	err = a.pool.QueryRow(ctx, `INSERT INTO operations (deployment_id, kind, status) VALUES ($1, 'update', 'awaiting_approval') RETURNING id`, ids["web"]).Scan(&op)
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.pool.Exec(ctx, `INSERT INTO operations (deployment_id, kind, status, created_at) VALUES ($1, 'refresh', 'succeeded', now() + interval '1 second')`, ids["web"])
	if err != nil {
		t.Fatal(err)
	}

	s := newSession(t, newBrowser(t), a)
	s.signIn(adminEmail, adminPassword)
	s.open("/deployments")
	s.screenshot("deployments")
	names := func() []string {
		return eval[[]string](s, `[...document.querySelectorAll('[data-deployment]')].map(r => r.dataset.deployment)`)
	}
	if got := strings.Join(names(), ","); got != "cache,worker,db,api,web" {
		t.Fatalf("newest first the list is %s", got)
	}
	web := rowWith(s.rows("deployments"), "acme")
	if web == nil || web[1] != "dev" {
		t.Fatalf("the list's first columns are tenant and environment: %q", s.rows("deployments"))
	}
	if got := s.text(`[data-testid="outputs-web"] [data-key="ip_address"]`); got != "10.0.0.7" {
		t.Errorf("web's ip_address output reads %q", got)
	}
	if got := s.text(`[data-deployment="api"] td:nth-child(6)`); got != "—" {
		t.Errorf("a deployment without outputs shows %q", got)
	}
	if got := s.text(`[data-testid="deployments"] tbody`); strings.Contains(got, "{") {
		t.Errorf("the list shows JSON: %s", got)
	}
	if got := s.text(`[data-deployment="api"] .badge`); got != "cancelled" {
		t.Errorf("a cancelled deployment is listed as %q", got)
	}
	links := eval[[]string](s, `[...document.querySelectorAll('[data-deployment="web"] a')].map(a => a.getAttribute('href'))`)
	want := []string{"/tenants/" + acme.ID.String(), "/environments/" + dev.ID.String(), "/deployments/" + ids["web"].String()}
	for _, w := range want {
		if !slices.Contains(links, w) {
			t.Errorf("web's row links to %v, not to %s", links, w)
		}
	}

	// Sorted by name, two at a time: each page goes on where the last ended.
	s.follow(`th a[data-sort="Name"]`)
	if got := eval[string](s, `document.querySelector('th a[data-sort="Name"]').closest('th').getAttribute('aria-sort')`); got != "ascending" {
		t.Errorf("sorted by name, its heading says %q", got)
	}
	if got := strings.Join(names(), ","); got != "api,cache,db,web,worker" {
		t.Fatalf("by name the list is %s", got)
	}
	s.open("/deployments?sort=name&limit=2")
	var paged []string
	for range 4 {
		paged = append(paged, names()...)
		next := eval[string](s, `document.querySelector('a[rel="next"]')?.getAttribute('href') ?? ''`)
		if next == "" {
			break
		}
		s.open(next)
	}
	if got := strings.Join(paged, ","); got != "api,cache,db,web,worker" {
		t.Errorf("by name, page after page: %s", got)
	}
	s.open("/deployments?sort=name")
	s.follow(`th a[data-sort="Name"]`)
	if got := strings.Join(names(), ","); got != "worker,web,db,cache,api" {
		t.Errorf("by name reversed the list is %s", got)
	}
	// The search keeps the order chosen.
	s.fill("#f-q", "w")
	s.follow(`[data-testid="deployment-filters"] button`)
	if got := strings.Join(names(), ","); got != "worker,web" {
		t.Errorf("names with w, reversed: %s", got)
	}
	// An environment is found by a search beside its filter, which narrows the choices as it
	// is typed: each named with its tenant, where the list mixes tenants.
	s.open("/deployments")
	s.fill("#f-environment_search", "glob")
	s.waitFor(`[...document.querySelectorAll('#f-environment_id option')].map(o => o.textContent).join() === 'Any,prod · globex'`)
	s.choose("#f-environment_id", prod.ID.String())
	s.follow(`[data-testid="deployment-filters"] button`)
	if got := strings.Join(names(), ","); got != "worker,api" {
		t.Errorf("deployments in globex's prod: %s", got)
	}
	if got := eval[string](s, `document.querySelector('#f-environment_id').selectedOptions[0].textContent`); got != "prod · globex" {
		t.Errorf("filtered by globex's prod, the filter shows %q", got)
	}

	// The deployment's page leads back, and says what its buttons do.
	s.open("/deployments/" + ids["web"].String())
	if got := s.text(`[data-testid="breadcrumbs"]`); !strings.Contains(got, "Deployments") || !strings.Contains(got, "dev") {
		t.Errorf("the deployment's breadcrumbs: %q", got)
	}
	if got := s.text(`[data-testid="refresh"]`); got != "Refresh from the cloud" {
		t.Errorf("the refresh button says %q", got)
	}
	if got := s.text(`[data-testid="active-operation"]`); !strings.Contains(got, "awaiting approval") {
		t.Errorf("the operation waiting shows as %q", got)
	}
	if got := column(s.rows("operations"), 1); !slices.Equal(got, []string{"succeeded", "awaiting approval"}) {
		t.Errorf("the history shows %q", got)
	}
	s.follow(`[data-testid="operations"] th a[data-sort="Status"]`)
	if got := column(s.rows("operations"), 1); !slices.Equal(got, []string{"awaiting approval", "succeeded"}) {
		t.Errorf("the history by status shows %q", got)
	}
	if got := s.text(`[data-testid="active-operation"]`); !strings.Contains(got, "awaiting approval") {
		t.Errorf("sorted, the history still names the operation waiting: %q", got)
	}
	s.fill(`[data-testid="destroy-form"] input[name="confirm"]`, "wbe")
	if status := s.submit(`[data-testid="destroy-form"]`); status != 422 {
		t.Errorf("a wrong name answers %d", status)
	}
	if got := s.fieldError("confirm"); !strings.Contains(got, "Type web") || !strings.Contains(got, "wbe") {
		t.Errorf("a wrong name in the destroy confirmation says %q", got)
	}
	s.open("/operations/" + op.String())
	crumbs := eval[[]string](s, `[...document.querySelectorAll('[data-testid="breadcrumbs"] a')].map(a => a.getAttribute('href'))`)
	if !slices.Equal(crumbs, []string{"/deployments", "/environments/" + dev.ID.String(), "/deployments/" + ids["web"].String()}) {
		t.Errorf("the operation's breadcrumbs lead to %v", crumbs)
	}
	if got := s.text(`[data-testid="operation-status"]`); got != "awaiting approval" {
		t.Errorf("the operation's status reads %q", got)
	}
}
