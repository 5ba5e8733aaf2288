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
// installation of thirty environments: the dashboard lists twenty and links to the others.
func TestDashboard_ListsAFewEnvironmentsAndLinksToTheRest(t *testing.T) {
	s := apptest.NewSite(t)
	hash, err := auth.HashPassword("seeded password")
	apptest.Must(t, err)
	apptest.Must(t, seed.Run(context.Background(), s.Pool, seed.Size{Tenants: 10, Components: 20, Deployments: 10, Operations: 10, AuditEvents: 10}, hash))
	b := apptest.NewBrowser(t, s.URL)
	b.SignIn(t, seed.Provider, "seeded password")
	r := b.Get(t, "/")
	apptest.WantStatus(t, r, http.StatusOK)
	section := string(r.Body)[strings.Index(string(r.Body), `data-testid="dashboard-environments"`):]
	section = section[:strings.Index(section, "</section>")]
	if n := strings.Count(section, `<a href="/environments/`); n != 20 {
		t.Errorf("the dashboard lists %d environments, want 20", n)
	}
	apptest.WantIn(t, r, `data-testid="more-environments"><a href="/environments">10 more environments</a>`)
}
