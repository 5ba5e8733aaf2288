package deploy_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"nimbus/app/apptest"
)

// A Proxmox zone is published once it has its API access, and its system service's engine is
// handed that access in its environment: a real engine run, watched from outside. The Proxmox
// VE provider plugin is not on this machine and no Proxmox VE runs here, so the component
// declares no resource and nothing reaches an API; what is shown is the hand-over to the
// engine's processes, and that nothing Nimbus keeps holds the secret.
func TestDeploy_AProxmoxEngineIsHandedItsZonesAPIAccess(t *testing.T) {
	ctx := context.Background()
	pve := apptest.NewProxmoxAPI(t)
	s := apptest.NewSite(t)
	root := s.Token(t, s.Admin)
	c := apptest.ProxmoxNote(t, s)
	_, err := s.Components.Publish(ctx, s.Admin, c.ID, c.Revision, "first")
	apptest.Must(t, err)

	r := s.Call(t, "POST", "/api/v1/landing-zones", root, map[string]any{"name": "pve-eu", "provider": "proxmox"})
	apptest.WantStatus(t, r, http.StatusCreated)
	zone := r.JSON(t)["id"].(string)
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/system-services", root, map[string]any{
		"component_id": c.ID, "name": "note", "parameters": map[string]any{"name": "note"}}), http.StatusCreated)
	r = s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/publish", root, nil)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantProblem(t, r, "proxmox_access", "required")
	apptest.WantIn(t, r, "landing zone pve-eu has no Proxmox API access")
	apptest.WantStatus(t, s.Call(t, "PUT", "/api/v1/landing-zones/"+zone+"/proxmox-access", root, pve.Access()), http.StatusOK)

	stop := apptest.WatchProcesses(pve.Secret)
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/publish", root, nil), http.StatusAccepted)
	z := s.WaitZoneServices(t, root, zone)
	seen, looks := stop()
	if z["system_status"] != "active" {
		t.Fatalf("after publishing: %v", z)
	}
	if looks < 10 || len(seen) == 0 {
		t.Fatalf("in %d looks while the system service deployed, no process held the token: %v", looks, seen)
	}
	for _, where := range seen {
		if !strings.HasPrefix(where, "environ of ") || !strings.Contains(where, "pulumi") {
			t.Errorf("the token is in the %s, want only the engine's environment", where)
		}
	}
	if where := s.TablesHolding(t, pve.Secret); len(where) > 0 {
		t.Fatalf("the token's secret is in the clear in %v", where)
	}
	if strings.Contains(s.Logs.String(), pve.Secret) {
		t.Fatal("the server's log holds the token's secret")
	}

	// A zone published before Nimbus took API access has none: a deploy there is refused in
	// words, and so is one outside any landing zone.
	_, err = s.Pool.Exec(ctx, `DELETE FROM zone_proxmox_access WHERE landing_zone_id = $1`, zone)
	apptest.Must(t, err)
	sysEnv := s.Call(t, "GET", "/api/v1/landing-zones/"+zone, root, nil).JSON(t)["system_environment_id"].(string)
	r = s.Call(t, "POST", "/api/v1/deployments", root, map[string]any{"component_id": c.ID, "environment_id": sysEnv,
		"name": "late", "parameters": map[string]any{"name": "late"}})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantProblem(t, r, "component_id", "proxmox_access")
	apptest.WantIn(t, r, "landing zone pve-eu has no Proxmox API access: a provider admin sets it on the zone's page")
	r = s.Call(t, "POST", "/api/v1/deployments", s.Token(t, s.AdminA), map[string]any{"component_id": c.ID,
		"environment_id": s.Dev(t).ID, "name": "stray", "parameters": map[string]any{"name": "stray"}})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantProblem(t, r, "component_id", "proxmox_access")
}
