package component_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/apptest"
)

// A Proxmox component's draft is checked with the API access of a Proxmox zone the provider
// admin chooses: the engine that previews it is handed the zone's token in its environment,
// and nothing else holds it. No Proxmox VE runs here and its provider plugin is not on this
// machine, so the draft declares no resource: what is shown is the hand-over (as
// deploy's TestDeploy_AProxmoxEngineIsHandedItsZonesAPIAccess shows a deploy's).
func TestCheck_AProxmoxDraftPreviewsWithTheChosenZonesAPIAccess(t *testing.T) {
	pve := apptest.NewProxmoxAPI(t)
	s := apptest.NewSite(t)
	root := s.Token(t, s.Admin)
	c := apptest.ProxmoxNote(t, s)
	check := "/api/v1/components/" + c.ID.String() + "/check"
	b := apptest.NewBrowser(t, s.URL)
	apptest.WantStatus(t, b.SignIn(t, "root@example.com", "correct horse battery"), http.StatusSeeOther)
	editor := "/components/" + c.ID.String() + "/edit"

	// No zone has the access yet: the check is refused, saying where to set it.
	r := s.Call(t, "POST", check, root, nil)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantProblem(t, r, "landing_zone_id", "proxmox_access")
	apptest.WantIn(t, r, "set a Proxmox zone's access first")
	apptest.WantIn(t, b.Get(t, editor), `data-testid="check-refused"`)

	r = s.Call(t, "POST", "/api/v1/landing-zones", root, map[string]any{"name": "pve-eu", "provider": "proxmox"})
	apptest.WantStatus(t, r, http.StatusCreated)
	zone := r.JSON(t)["id"].(string)
	apptest.WantStatus(t, s.Call(t, "PUT", "/api/v1/landing-zones/"+zone+"/proxmox-access", root, pve.Access()), http.StatusOK)
	page := b.Get(t, editor)
	apptest.WantIn(t, page, `name="landing_zone_id"`)
	apptest.WantIn(t, page, `<option value="`+zone+`">pve-eu</option>`)

	for _, bad := range []struct {
		body map[string]any
		rule string
	}{
		{nil, "required"},
		{map[string]any{"landing_zone_id": uuid.NewString()}, "proxmox_access"},
		{map[string]any{"landing_zone_id": "pve-eu"}, "uuid"},
	} {
		r := s.Call(t, "POST", check, root, bad.body)
		apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
		apptest.WantProblem(t, r, "landing_zone_id", bad.rule)
	}
	r = s.Call(t, "POST", check, s.Token(t, s.AdminA), map[string]any{"landing_zone_id": zone})
	if r.Status == http.StatusAccepted {
		t.Fatal("a tenant admin checked with the provider's Proxmox API access")
	}

	stop := apptest.WatchProcesses(pve.Secret, "PROXMOX_VE_ENDPOINT="+pve.URL)
	r = s.Call(t, "POST", check, root, map[string]any{"landing_zone_id": zone})
	apptest.WantStatus(t, r, http.StatusAccepted)
	got := s.WaitCheck(t, root, r.JSON(t)["id"].(string))
	seen, looks := stop()
	if got["status"] != "succeeded" {
		t.Fatalf("the check: %v", got)
	}
	if looks < 10 || len(seen) < 2 {
		t.Fatalf("in %d looks while the check ran, no process held the token and the endpoint: %v", looks, seen)
	}
	for _, where := range seen {
		if !strings.HasPrefix(where, "environ of ") || !strings.Contains(where, "pulumi") {
			t.Errorf("the access is in the %s, want only the engine's environment", where)
		}
	}
	if where := s.TablesHolding(t, pve.Secret); len(where) > 0 {
		t.Fatalf("the token's secret is in the clear in %v", where)
	}
	if strings.Contains(s.Logs.String(), pve.Secret) {
		t.Fatal("the server's log holds the token's secret")
	}
}
