package e2e

import (
	"context"
	"testing"

	"nimbus/app/domain/component"
	"nimbus/app/domain/ipam"
	"nimbus/app/kernel/access"
	"nimbus/app/orchestration/environment"
	"nimbus/app/orchestration/landingzone"
)

// TestBrowser_Tour visits the main pages of an installation with something in it, as a provider
// admin, in the light and the dark theme, and leaves a screenshot of each. Every page must
// render whole in both: no error page, no horizontal scrolling, nothing loaded from elsewhere.
func TestBrowser_Tour(t *testing.T) {
	t.Parallel()
	a := startApp(t)
	ctx := context.Background()
	admin := a.principal(t, adminEmail)
	if _, err := component.EnsureBuiltins(ctx, component.NewService(a.pool, nil, nil)); err != nil {
		t.Fatal(err)
	}
	acme := a.createTenant(t, "acme")
	a.addMember(t, "ops@acme.test", acme.ID, access.TenantAdmin)
	env, err := environment.NewService(a.pool).Create(ctx, admin, acme.ID, "dev")
	if err != nil {
		t.Fatal(err)
	}
	pool, err := ipam.NewService(a.pool).CreatePool(ctx, admin, ipam.NewPool{Name: "dev-net", Prefix: "10.20.0.0/24", EnvironmentID: env.ID, Reserved: []string{"10.20.0.0/28"}})
	if err != nil {
		t.Fatal(err)
	}
	zone, err := landingzone.NewService(a.pool, nil, nil).Create(ctx, admin, landingzone.NewZone{Name: "eu-west", Description: "The simulated cloud's western region", Provider: "simcloud"})
	if err != nil {
		t.Fatal(err)
	}
	deployment := a.deployMachine(t, "ops@acme.test", env.ID.String())
	var machine, operation, ops string
	if err := a.pool.QueryRow(ctx, `SELECT component_id::text, (SELECT id::text FROM operations WHERE deployment_id = d.id LIMIT 1),
		(SELECT id::text FROM users WHERE email = 'ops@acme.test') FROM deployed_components d WHERE id = $1`, deployment).Scan(&machine, &operation, &ops); err != nil {
		t.Fatal(err)
	}

	pages := []struct{ name, path string }{
		{"dashboard", "/"},
		{"tenants", "/tenants"},
		{"tenant", "/tenants/" + acme.ID.String()},
		{"users", "/users"},
		{"user", "/users/" + ops},
		{"account", "/account"},
		{"catalog", "/catalog"},
		{"component", "/components/" + machine},
		{"component-editor", "/components/" + machine + "/edit"},
		{"environments", "/environments"},
		{"environment", "/environments/" + env.ID.String()},
		{"environment-resolvers", "/environments/" + env.ID.String() + "/resolvers"},
		{"pools", "/ipam"},
		{"pool", "/ipam/pools/" + pool.ID.String()},
		{"landing-zones", "/landing-zones"},
		{"landing-zone", "/landing-zones/" + zone.ID.String()},
		{"deployments", "/deployments"},
		{"deployment", "/deployments/" + deployment},
		{"operation", "/operations/" + operation},
		{"approvals", "/approvals"},
		{"approval-policies", "/approval-policies"},
		{"governance", "/tenants/" + acme.ID.String() + "/governance"},
		{"events", "/events"},
		{"audit", "/audit"},
		{"images", "/images"},
	}
	s := newSession(t, newBrowser(t), a)
	s.signIn(adminEmail, adminPassword)
	for _, theme := range []string{"light", "dark"} {
		eval[bool](s, `(localStorage.setItem('nimbus-theme', `+jsString(theme)+`), true)`)
		for _, p := range pages {
			if status := s.open(p.path); status != 200 {
				t.Errorf("%s (%s): status %d", p.name, p.path, status)
				continue
			}
			s.waitFor(`document.readyState === 'complete' && document.documentElement.dataset.theme === ` + jsString(theme))
			if eval[bool](s, `document.documentElement.scrollWidth > document.documentElement.clientWidth`) {
				t.Errorf("%s (%s) scrolls sideways in the %s theme", p.name, p.path, theme)
			}
			s.screenshot(p.name + "-" + theme)
		}
	}
}
