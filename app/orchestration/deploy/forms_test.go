package deploy_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/orchestration/environment"
)

// The deployment page's forms: parameters updated through the page, a bad value shown beside
// its field, a destroy refused until the name is typed, an upgrade with no version named.
func TestPages_DeploymentForms(t *testing.T) {
	s := apptest.NewSite(t)
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	admin := s.Token(t, s.AdminA)
	r := s.Call(t, "POST", "/api/v1/deployments", admin, map[string]any{"component_id": s.Shared.ID, "environment_id": env.ID,
		"name": "web", "parameters": map[string]any{"name": "web-1"}})
	apptest.WantStatus(t, r, http.StatusAccepted)
	body := r.JSON(t)
	id := body["deployment"].(map[string]any)["id"].(string)
	if op := s.WaitOperation(t, admin, body["operation"].(map[string]any)["id"].(string)); op["status"] != "succeeded" {
		t.Fatalf("deploy: %v", op)
	}

	b := apptest.NewBrowser(t, s.URL)
	b.SignIn(t, "admin-a@example.com", "long enough password")
	page := "/deployments/" + id
	if got := string(b.Get(t, page).Body); !strings.Contains(got, `data-testid="param-form"`) || !strings.Contains(got, `value="web-1"`) {
		t.Fatalf("the deployment page: %.2000s", got)
	}
	form := url.Values{"_csrf": {b.CSRF}, "action": {"update"}, "p.name": {"web-1"}, "p.cores": {"many"}}
	r = b.Post(t, page+"/apply", form)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), `data-field-error="parameters.cores"`) {
		t.Fatalf("no error beside cores: %.2000s", r.Body)
	}
	form.Set("p.cores", "3")
	r = b.Post(t, page+"/apply", form)
	apptest.WantStatus(t, r, http.StatusSeeOther)
	if op := s.WaitOperation(t, admin, strings.TrimPrefix(r.Header.Get("Location"), "/operations/")); op["status"] != "succeeded" || op["kind"] != "update" {
		t.Fatalf("the update from the page: %v", op)
	}

	apptest.WantStatus(t, b.Post(t, page+"/upgrade", url.Values{"_csrf": {b.CSRF}, "action": {"upgrade"}}), http.StatusUnprocessableEntity)
	apptest.WantStatus(t, b.Post(t, page+"/destroy", url.Values{"_csrf": {b.CSRF}, "confirm": {"wbe"}}), http.StatusUnprocessableEntity)
	r = b.Post(t, page+"/destroy", url.Values{"_csrf": {b.CSRF}, "confirm": {"web"}})
	apptest.WantStatus(t, r, http.StatusSeeOther)
	if op := s.WaitOperation(t, admin, strings.TrimPrefix(r.Header.Get("Location"), "/operations/")); op["status"] != "succeeded" {
		t.Fatalf("the destroy from the page: %v", op)
	}
}
