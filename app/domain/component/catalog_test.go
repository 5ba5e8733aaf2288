package component_test

import (
	"net/http"
	"strings"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/orchestration/environment"
)

// TestCatalog_OffersWhatTheViewerCanDeploy: a tenant is offered the components of the providers
// its environments deploy to, never the parts Nimbus deploys itself; a deploy of another
// provider's component, or of such a part, is refused naming the rule; provider admins see all.
func TestCatalog_OffersWhatTheViewerCanDeploy(t *testing.T) {
	s := apptest.NewSite(t)
	ids := apptest.BuiltinIDs(t, s)
	root, admin, user := s.Token(t, s.Admin), s.Token(t, s.AdminA), s.Token(t, s.UserA)
	names := func(token string) string {
		t.Helper()
		var out []string
		for _, c := range s.Call(t, "GET", "/api/v1/components?per_page=100", token, nil).JSON(t)["components"].([]any) {
			out = append(out, c.(map[string]any)["name"].(string))
		}
		return " " + strings.Join(out, " ") + " "
	}
	offers := func(who, token string, want, not []string) {
		t.Helper()
		got := names(token)
		for _, n := range want {
			if !strings.Contains(got, " "+n+" ") {
				t.Errorf("%s is not offered %s: %s", who, n, got)
			}
		}
		for _, n := range not {
			if strings.Contains(got, " "+n+" ") {
				t.Errorf("%s is offered %s: %s", who, n, got)
			}
		}
	}
	parts := []string{"k8s-namespace", "k8s-quota", "k8s-network-policy", "k8s-secret", "k8s-ingress", "k8s-tenant-access"}
	// No environment yet: nothing to go by but the parts.
	offers("a tenant without environments", user, []string{"simcloud-machine", "proxmox-vm"}, parts)
	offers("the provider admin", root, append([]string{"simcloud-machine", "proxmox-vm"}, parts...), nil)

	// A simulated-cloud zone, and an environment in it.
	r := s.Call(t, "POST", "/api/v1/landing-zones", root, map[string]any{"name": "sim-eu", "provider": "simcloud"})
	apptest.WantStatus(t, r, http.StatusCreated)
	zone := r.JSON(t)["id"].(string)
	r = s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/templates", root, map[string]any{"name": "base", "mandatory_components": []map[string]any{
		{"component_id": ids["simcloud-network"], "name": "base", "parameters": map[string]any{"name": "base-net", "cidr": "10.1.0.0/24"}}}})
	apptest.WantStatus(t, r, http.StatusCreated)
	template := r.JSON(t)["id"].(string)
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/publish", root, nil), http.StatusAccepted)
	s.WaitZoneServices(t, root, zone)
	r = s.Call(t, "POST", "/api/v1/environments", admin, map[string]any{"tenant_id": s.A.ID, "name": "dev", "template_id": template})
	apptest.WantStatus(t, r, http.StatusAccepted)
	env := r.JSON(t)["id"].(string)
	if got := s.WaitEnvironment(t, admin, env); got["status"] != "active" {
		t.Fatalf("the environment: %v", got)
	}
	offers("a tenant on the simulated cloud", user, []string{"simcloud-machine", "simcloud-network", "shared-machine"}, append([]string{"proxmox-vm"}, parts...))

	deploy := func(token, component, env string) apptest.Reply {
		return s.Call(t, "POST", "/api/v1/deployments", token, map[string]any{"component_id": ids[component], "environment_id": env,
			"name": "x", "parameters": map[string]any{"name": "x"}})
	}
	r = deploy(user, "proxmox-vm", env)
	apptest.WantProblem(t, r, "component_id", "provider")
	if !strings.Contains(string(r.Body), "proxmox-vm is a proxmox component, and environment dev deploys to simcloud (landing zone sim-eu)") {
		t.Fatalf("a proxmox machine into a simulated-cloud environment: %s", r.Body)
	}
	// An environment in no landing zone deploys anything, except the parts Nimbus deploys itself.
	plain, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "plain")
	apptest.Must(t, err)
	offers("a tenant with an environment in no zone", user, []string{"proxmox-vm"}, parts)
	apptest.WantProblem(t, deploy(admin, "k8s-namespace", plain.ID.String()), "component_id", "system_only")

	// The page counts in words.
	b := apptest.NewBrowser(t, s.URL)
	b.SignIn(t, "user-a@example.com", "long enough password")
	apptest.WantIn(t, b.Get(t, "/catalog?search=simcloud-network"), `data-testid="catalog-count">1 component<`)
}
