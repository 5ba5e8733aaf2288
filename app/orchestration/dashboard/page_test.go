package dashboard_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/domain/auth"
	"nimbus/db/seed"
)

// TestDashboard_ListsAFewEnvironmentsAndLinksToTheRest signs a provider admin in to an
// installation of thirty environments, two of them decommissioned: the dashboard lists twenty,
// a failed one first, then one under way, and links to the other six.
func TestDashboard_ListsAFewEnvironmentsAndLinksToTheRest(t *testing.T) {
	s := apptest.NewSite(t)
	ctx := context.Background()
	hash, err := auth.HashPassword("seeded password")
	apptest.Must(t, err)
	apptest.Must(t, seed.Run(ctx, s.Pool, seed.Size{Tenants: 10, Components: 20, Deployments: 10, Operations: 10, AuditEvents: 10}, hash))
	// Environments of the last tenant, which by name alone would come last, and the first one.
	move := func(tenant, env, status string) string {
		var id string
		apptest.Must(t, s.Pool.QueryRow(ctx, `UPDATE environments e SET status = $3 FROM tenants t
			WHERE t.id = e.tenant_id AND t.name = $1 AND e.name = $2 RETURNING e.id::text`, tenant, env, status).Scan(&id))
		return id
	}
	failed, underWay := move("Tenant 010", "prod", "failed"), move("Tenant 010", "test", "provisioning")
	move("Tenant 010", "dev", "decommissioned")
	move("Tenant 001", "dev", "decommissioned")
	// One operation runs and another waits for approval: each in its own list.
	var running, waiting string
	apptest.Must(t, s.Pool.QueryRow(ctx, `WITH two AS (SELECT id, row_number() OVER (ORDER BY id) AS n FROM operations LIMIT 2),
		moved AS (UPDATE operations o SET status = CASE two.n WHEN 1 THEN 'running' ELSE 'awaiting_approval' END
		          FROM two WHERE o.id = two.id RETURNING o.id::text, o.status)
		SELECT max(id) FILTER (WHERE status = 'running'), max(id) FILTER (WHERE status = 'awaiting_approval') FROM moved`).Scan(&running, &waiting))
	b := apptest.NewBrowser(t, s.URL)
	b.SignIn(t, seed.Provider, "seeded password")
	r := b.Get(t, "/")
	apptest.WantStatus(t, r, http.StatusOK)
	section := string(r.Body)[strings.Index(string(r.Body), `data-testid="dashboard-environments"`):]
	section = section[:strings.Index(section, "</section>")]
	if n := strings.Count(section, `<a href="/environments/`); n != 20 {
		t.Errorf("the dashboard lists %d environments, want 20", n)
	}
	first, second := strings.Index(section, `<a href="/environments/`+failed), strings.Index(section, `<a href="/environments/`+underWay)
	if first < 0 || second < first || strings.Index(section, `<a href="/environments/`) != first {
		t.Errorf("the dashboard lists the failed environment at %d and the one under way at %d, want them first:\n%s", first, second, section)
	}
	for list, want := range map[string]string{`data-testid="dashboard-active"`: running, `data-testid="dashboard-awaiting"`: waiting} {
		part := string(r.Body)[strings.Index(string(r.Body), list):]
		if part = part[:strings.Index(part, "</section>")]; !strings.Contains(part, want) || strings.Contains(part, map[string]string{running: waiting, waiting: running}[want]) {
			t.Errorf("the list %s should hold operation %s alone of the two:\n%s", list, want, part)
		}
	}
	apptest.WantIn(t, r, `data-testid="more-environments"><a href="/environments">8 more environments</a>`)
}
