package landingzone_test

import (
	"net/http"
	"strings"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/orchestration/environment"
)

// An input a resolver fills is refused where it is set, once and saying which resolver fills
// it: in a template saved in a zone that configures the resolver, when the resolver is
// configured on a zone whose template sets it, and in a deploy to an environment that
// resolves it.
func TestAPI_AnInputAResolverFillsIsRefusedWhereItIsSet(t *testing.T) {
	s := apptest.NewSite(t)
	ids := apptest.BuiltinIDs(t, s)
	root := s.Token(t, s.Admin)
	zone := func(name string) string {
		r := s.Call(t, "POST", "/api/v1/landing-zones", root, map[string]any{"name": name, "provider": "simcloud"})
		apptest.WantStatus(t, r, http.StatusCreated)
		return r.JSON(t)["id"].(string)
	}
	naming := map[string]any{"pattern": "{tenant}-{env}-{seq:02d}"}
	template := func(zone, name string) apptest.Reply {
		return s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/templates", root, map[string]any{"name": name,
			"mandatory_components": []map[string]any{{"component_id": ids["simcloud-machine"], "name": "web", "parameters": map[string]any{"name": "web", "cores": 2}}}})
	}
	once := func(r apptest.Reply, field, says string) {
		t.Helper()
		apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
		body := string(r.Body)
		if n := strings.Count(body, `"field":"`+field+`"`); n != 1 || !strings.Contains(body, says) || strings.Contains(body, "not an input") {
			t.Fatalf("%s is refused %d times, want once saying %q: %s", field, n, says, body)
		}
	}

	// Naming first, then a template that names its machine: refused as it is saved.
	configured := zone("named")
	apptest.WantStatus(t, s.Call(t, "PUT", "/api/v1/landing-zones/"+configured+"/resolvers/naming", root, naming), http.StatusOK)
	once(template(configured, "standard"), "mandatory_components[0].parameters.name", "is filled by the naming resolver of landing zone named")

	// The template first, then naming: the configuration is refused while the template is offered.
	later := zone("later")
	r := template(later, "fixed")
	apptest.WantStatus(t, r, http.StatusCreated)
	fixed := r.JSON(t)["id"].(string)
	once(s.Call(t, "PUT", "/api/v1/landing-zones/"+later+"/resolvers/naming", root, naming), "config",
		"template fixed sets name of web (simcloud-machine), which the naming resolver would fill")
	apptest.WantStatus(t, s.Call(t, "DELETE", "/api/v1/landing-zones/"+later+"/templates/"+fixed, root, nil), http.StatusNoContent)
	apptest.WantStatus(t, s.Call(t, "PUT", "/api/v1/landing-zones/"+later+"/resolvers/naming", root, naming), http.StatusOK)

	// A deploy that sets it where the environment resolves it hears it once.
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	apptest.WantStatus(t, s.Call(t, "PUT", "/api/v1/environments/"+env.ID.String()+"/resolvers/naming", root, naming), http.StatusOK)
	once(s.Call(t, "POST", "/api/v1/deployments", s.Token(t, s.AdminA), map[string]any{"component_id": ids["simcloud-machine"],
		"environment_id": env.ID, "name": "web", "parameters": map[string]any{"name": "web"}}),
		"parameters.name", "is set when the deployment is deployed, by the naming resolver")
}
