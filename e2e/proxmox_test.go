package e2e

import (
	"net/http"
	"strings"
	"testing"

	"nimbus/app/apptest"
)

// A provider admin gives a Proxmox zone its API access on the zone's page: refused first for
// the certificate the system does not trust, with the field that needs it, then saved with the
// CA certificate, the secret shown only as set. The API is the tests' stand-in for Proxmox VE,
// which does not run here.
func TestBrowser_AProviderAdminGivesAProxmoxZoneItsAPIAccess(t *testing.T) {
	t.Parallel()
	pve := apptest.NewProxmoxAPI(t)
	a := startApp(t)
	root := a.token(t, adminEmail)
	var zone struct {
		ID string `json:"id"`
	}
	apiPost(t, a.url+"/api/v1/landing-zones", root, map[string]any{"name": "pve-eu", "provider": "proxmox"}, &zone)

	admin := newSession(t, newBrowser(t), a)
	admin.signIn(adminEmail, adminPassword)
	admin.open("/landing-zones/" + zone.ID)
	admin.follow(`[data-testid="zone-proxmox-access"]`)
	if got := admin.text(`[data-testid="no-proxmox-access"]`); !strings.Contains(got, "no Proxmox API access") {
		t.Fatalf("a zone without access says %q", got)
	}
	admin.fill(`#f-endpoint`, pve.URL)
	admin.fill(`#f-token_id`, pve.TokenID)
	admin.fill(`#f-secret`, pve.Secret)
	if status := admin.submit(`[data-testid="proxmox-access-form"]`); status != http.StatusUnprocessableEntity {
		t.Fatalf("saving without the CA certificate: status %d", status)
	}
	if got := admin.text(`[data-field-error="ca_cert"]`); !strings.Contains(got, "not trusted") {
		t.Fatalf("the CA certificate's field says %q", got)
	}
	admin.fill(`#f-secret`, pve.Secret)
	admin.choose(`#f-ca_cert`, pve.CA)
	if status := admin.submit(`[data-testid="proxmox-access-form"]`); status != http.StatusOK || admin.text(`[data-testid="proxmox-version"]`) != "8.4.1" {
		t.Fatalf("saving the access: status %d on %s", status, admin.path())
	}
	if admin.text(`[data-testid="proxmox-secret"]`) != "set" || admin.text(`[data-testid="proxmox-token-id"]`) != pve.TokenID {
		t.Fatal("the saved access does not show its token as set")
	}
	admin.screenshot("proxmox-access")
}
