package deploy_test

import (
	"context"
	"net/http"
	"regexp"
	"slices"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/domain/auth"
	"nimbus/app/orchestration/deploy"
	"nimbus/db/seed"
)

// optionLabel reads the labels of a page's or fragment's options, the "Any" of a filter aside.
var optionLabel = regexp.MustCompile(`<option value="[0-9a-f-]{36}"( selected)?>([^<]+)</option>`)

// TestDeploymentsList_FiltersOfferAFewChoicesAndSearchTheRest reads the deployments list's
// component filter in a seeded history with more components deployed than a filter shows: it
// offers the first few by name, keeps the one chosen among them wherever it sorts, and its
// search finds the others; a tenant admin is offered only their tenant's.
func TestDeploymentsList_FiltersOfferAFewChoicesAndSearchTheRest(t *testing.T) {
	s := apptest.NewSite(t)
	const password = "seeded password"
	hash, err := auth.HashPassword(password)
	if err != nil {
		t.Fatal(err)
	}
	// Tenant 1 deploys its own machine-00011, -13 … -99; tenant 2 the provider's machine-00001 … -10.
	size := seed.Size{Tenants: 2, Components: 100, Deployments: 100, Operations: 100, AuditEvents: 10}
	if err := seed.Run(context.Background(), s.Pool, size, hash); err != nil {
		t.Fatal(err)
	}
	labels := func(r apptest.Reply) (all, selected []string) {
		for _, m := range optionLabel.FindAllStringSubmatch(string(r.Body), -1) {
			all = append(all, m[2])
			if m[1] != "" {
				selected = append(selected, m[2])
			}
		}
		return all, selected
	}
	provider := apptest.NewBrowser(t, s.URL)
	provider.SignIn(t, seed.Provider, password)

	r := provider.Get(t, "/deployments/choices/component")
	apptest.WantStatus(t, r, http.StatusOK)
	if got, _ := labels(r); len(got) != deploy.ChoicesShown || got[0] != "machine-00001" || !slices.IsSorted(got) {
		t.Errorf("the component filter offers %d choices, from %q: %q", len(got), got[0], got)
	}
	r = provider.Get(t, "/deployments/choices/component?component_search=Machine-0009")
	if got, _ := labels(r); !slices.Equal(got, []string{"machine-00091", "machine-00093", "machine-00095", "machine-00097", "machine-00099"}) {
		t.Errorf("searching machine-0009 offers %q", got)
	}
	var last string
	apptest.Must(t, s.Pool.QueryRow(context.Background(), `SELECT id FROM components WHERE name = 'machine-00099'`).Scan(&last))
	r = provider.Get(t, "/deployments?component_id="+last)
	apptest.WantStatus(t, r, http.StatusOK)
	if _, chosen := labels(r); !slices.Equal(chosen, []string{"machine-00099"}) {
		t.Errorf("filtered by machine-00099, past the first choices, the page has chosen %q", chosen)
	}
	apptest.WantIn(t, r, `data-deployment="vm-00089"`) // tenant 1's 45th
	r = provider.Get(t, "/deployments/choices/environment?environment_search=tenant+002")
	if got, _ := labels(r); !slices.Equal(got, []string{"dev · Tenant 002", "prod · Tenant 002", "test · Tenant 002"}) {
		t.Errorf("searching tenant 002's environments offers %q", got)
	}
	r = provider.Get(t, "/deployments/choices/tenant")
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantIn(t, r, "must be environment or component")

	admin := apptest.NewBrowser(t, s.URL)
	admin.SignIn(t, seed.AdminEmail(2), password)
	r = admin.Get(t, "/deployments")
	if got, _ := labels(r); len(got) != 10+3 || slices.Contains(got, "machine-00011") {
		t.Errorf("tenant 2's admin is offered %q", got)
	}
	if got, _ := labels(admin.Get(t, "/deployments/choices/component?component_id="+last)); len(got) != 10 || slices.Contains(got, "machine-00099") {
		t.Errorf("tenant 2's admin, choosing tenant 1's component, is offered %q", got)
	}
}
