package poller_test

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"nimbus/app/apptest"
	"nimbus/app/orchestration/environment"
)

// TestAdopt_AMachineMadeBehindNimbussBack makes a machine with the simulated cloud's own
// command, outside Nimbus: the zone's poller finds it unmanaged, and a provider admin adopts it
// into a deployment of the machine component. The deployment's first operation imports the
// machine rather than making another; afterwards a refresh finds nothing changed, and the item
// is the deployment's, active. Adopting what does not match is refused by name.
func TestAdopt_AMachineMadeBehindNimbussBack(t *testing.T) {
	s := apptest.NewSiteWith(t, apptest.SiteConfig{Backend: "file", PollInterval: 100 * time.Millisecond})
	simcloud := simcloudCommand(t, s)
	root, admin := s.Token(t, s.Admin), s.Token(t, s.AdminA)
	r := s.Call(t, "POST", "/api/v1/landing-zones", root, map[string]any{"name": "found", "provider": "simcloud"})
	apptest.WantStatus(t, r, http.StatusCreated)
	zone := r.JSON(t)["id"].(string)
	r = s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/event-sources", root,
		map[string]any{"name": "cloud", "kind": "cloud_provider", "config": map[string]any{"provider": "simcloud"}})
	apptest.WantStatus(t, r, http.StatusCreated)
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "ops")
	apptest.Must(t, err)
	_, err = s.Pool.Exec(t.Context(), `UPDATE environments SET landing_zone_id = $1 WHERE id = $2`, zone, env.ID)
	apptest.Must(t, err)
	ids := apptest.BuiltinIDs(t, s)

	machine := simcloud("machine", "create", "name=legacy-box", "image=debian-12")
	var item string
	apptest.WaitFor(t, "the poller to find "+machine+" unmanaged", func() bool {
		for _, it := range s.Call(t, "GET", "/api/v1/inventory?status=unmanaged", root, nil).JSON(t)["items"].([]any) {
			if m := it.(map[string]any); m["provider_id"] == machine {
				item = m["id"].(string)
			}
		}
		return item != ""
	})

	adopt := func(token string, body map[string]any) apptest.Reply {
		return s.Call(t, "POST", "/api/v1/inventory/"+item+"/adopt", token, body)
	}
	as := map[string]any{"component_id": ids["simcloud-machine"], "environment_id": env.ID, "name": "legacy",
		"parameters": map[string]any{"name": "legacy-box"}}
	apptest.WantProblem(t, adopt(root, map[string]any{"component_id": ids["simcloud-network"], "environment_id": env.ID, "name": "legacy",
		"parameters": map[string]any{"name": "net", "cidr": "10.9.0.0/24"}}), "component_id", "type")
	apptest.WantStatus(t, adopt(admin, as), http.StatusNotFound) // the zone's finds are the provider's
	apptest.WantProblem(t, s.Call(t, "POST", "/api/v1/inventory/"+s.Item(t).String()+"/adopt", root, as), "status", "unmanaged")

	// Adopted from its page, whose form offers the machine component and the zone's environment.
	apptest.WantIn(t, s.Call(t, "GET", "/inventory/"+item, root, nil), `data-testid="adopt"`, ids["simcloud-machine"], env.ID.String())
	form := url.Values{"component_id": {ids["simcloud-machine"]}, "environment_id": {env.ID.String()}, "name": {"legacy"}}
	r = s.Submit(t, "/inventory/"+item+"/adopt", root, url.Values{"component_id": form["component_id"], "environment_id": form["environment_id"],
		"name": form["name"], "parameters": {"not json"}})
	if r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/inventory/"+item {
		t.Fatalf("bad parameters from the page: %d to %q, want back to the item", r.Status, r.Header.Get("Location"))
	}
	form.Set("parameters", `{"name": "legacy-box"}`)
	r = s.Submit(t, "/inventory/"+item+"/adopt", root, form)
	operation, ok := strings.CutPrefix(r.Header.Get("Location"), "/operations/")
	if r.Status != http.StatusSeeOther || !ok {
		t.Fatalf("adopted from the page: %d to %q, want the operation", r.Status, r.Header.Get("Location"))
	}
	op := s.WaitOperation(t, root, operation)
	if op["status"] != "succeeded" {
		t.Fatalf("the adoption: %v", op)
	}
	deployment := op["deployment_id"].(string)
	if _, err := os.Stat(filepath.Join(s.Cloud, "machine", machine+".json")); err != nil {
		t.Fatalf("the adopted machine is gone: %v", err)
	}
	if machines, _ := filepath.Glob(filepath.Join(s.Cloud, "machine", "*.json")); len(machines) != 1 {
		t.Fatalf("the cloud holds %d machines, want the one adopted", len(machines))
	}
	got := s.Call(t, "GET", "/api/v1/inventory/"+item, root, nil).JSON(t)
	if got["status"] != "active" || got["deployment_id"] != deployment || got["tenant_id"] != s.A.ID.String() {
		t.Fatalf("the adopted item: %v", got)
	}
	apptest.WantStatus(t, adopt(root, map[string]any{"component_id": ids["simcloud-machine"], "environment_id": env.ID, "name": "again",
		"parameters": map[string]any{"name": "legacy-box"}}), http.StatusUnprocessableEntity)

	// A machine of another image: the component's would replace it, and adopting never deletes
	// what it adopts. The operation fails before its up, the machine stays, and so does its item.
	other := simcloud("machine", "create", "name=other-box", "image=ubuntu-24.04")
	var otherItem string
	apptest.WaitFor(t, "the poller to find "+other+" unmanaged", func() bool {
		for _, it := range s.Call(t, "GET", "/api/v1/inventory?status=unmanaged", root, nil).JSON(t)["items"].([]any) {
			if m := it.(map[string]any); m["provider_id"] == other {
				otherItem = m["id"].(string)
			}
		}
		return otherItem != ""
	})
	r = s.Call(t, "POST", "/api/v1/inventory/"+otherItem+"/adopt", root, map[string]any{"component_id": ids["simcloud-machine"],
		"environment_id": env.ID, "name": "other", "parameters": map[string]any{"name": "other-box"}})
	apptest.WantStatus(t, r, http.StatusAccepted)
	failed := s.WaitOperation(t, root, r.JSON(t)["operation"].(map[string]any)["id"].(string))
	if failed["status"] != "failed" || !strings.Contains(fmt.Sprint(failed), "replace "+other) {
		t.Fatalf("adopting with another image: %v, want it failed for the replace", failed)
	}
	if _, err := os.Stat(filepath.Join(s.Cloud, "machine", other+".json")); err != nil {
		t.Fatalf("the machine a failed adoption took is gone: %v", err)
	}
	if got := s.Call(t, "GET", "/api/v1/inventory/"+otherItem, root, nil).JSON(t); got["status"] != "unmanaged" {
		t.Fatalf("after a failed adoption the item is %v", got["status"])
	}

	r = s.Call(t, "POST", "/api/v1/deployments/"+deployment+"/refresh", root, nil)
	apptest.WantStatus(t, r, http.StatusAccepted)
	refresh := s.WaitOperation(t, root, r.JSON(t)["id"].(string))
	changes := refresh["changes"].(map[string]any)
	if refresh["status"] != "succeeded" || changes["update"] != nil || changes["delete"] != nil || changes["create"] != nil {
		t.Fatalf("a refresh after the adoption: %v, want nothing changed", refresh)
	}
}
