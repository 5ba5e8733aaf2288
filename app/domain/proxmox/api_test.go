package proxmox_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"nimbus/app/apptest"
)

// No Proxmox VE runs where the tests do: the API here is apptest.ProxmoxAPI, an HTTPS server
// answering /api2/json/version as Proxmox does.
func TestAccess_AProviderAdminSetsAZonesAPIAccessCheckedByTheAPI(t *testing.T) {
	pve := apptest.NewProxmoxAPI(t)
	s := apptest.NewSite(t)
	root, tenantAdmin := s.Token(t, s.Admin), s.Token(t, s.AdminA)
	r := s.Call(t, "POST", "/api/v1/landing-zones", root, map[string]any{"name": "pve", "provider": "proxmox"})
	apptest.WantStatus(t, r, http.StatusCreated)
	zone := r.JSON(t)["id"].(string)
	api, page := "/api/v1/landing-zones/"+zone+"/proxmox-access", "/landing-zones/"+zone+"/proxmox-access"
	given := func(change func(m map[string]any)) map[string]any {
		m := map[string]any{"endpoint": pve.URL, "token_id": pve.TokenID, "secret": pve.Secret, "ca_cert": pve.CA}
		change(m)
		return m
	}
	r = s.Call(t, "POST", "/api/v1/landing-zones", root, map[string]any{"name": "sim", "provider": "simcloud"})
	apptest.WantStatus(t, r, http.StatusCreated)
	r = s.Call(t, "PUT", "/api/v1/landing-zones/"+r.JSON(t)["id"].(string)+"/proxmox-access", root, given(func(map[string]any) {}))
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantIn(t, r, "is for simcloud, not Proxmox")
	apptest.WantIn(t, s.Call(t, "GET", "/landing-zones/"+zone, root, nil), `href="`+page+`"`)
	apptest.WantStatus(t, s.Call(t, "GET", api, root, nil), http.StatusNotFound)

	// Refused, each naming the field to change and the rule, and nothing kept.
	for _, c := range []struct {
		name        string
		change      func(m map[string]any)
		field, rule string
		want        string
	}{
		{"plain http", func(m map[string]any) { m["endpoint"] = strings.Replace(pve.URL, "https:", "http:", 1) }, "endpoint", "https", "https://"},
		{"a path", func(m map[string]any) { m["endpoint"] = pve.URL + "/api2/json" }, "endpoint", "https", "no path"},
		{"a user's name, not a token", func(m map[string]any) { m["token_id"] = "root@pam" }, "token_id", "pattern", "user@realm!name"},
		{"no secret", func(m map[string]any) { m["secret"] = "" }, "secret", "required", "secret"},
		{"not PEM", func(m map[string]any) { m["ca_cert"] = "not a certificate" }, "ca_cert", "pem", "PEM"},
		{"no API there", func(m map[string]any) { m["endpoint"] = "https://127.0.0.1:1" }, "endpoint", "reachable", "cannot reach the Proxmox API"},
		{"a certificate no one trusts", func(m map[string]any) { m["ca_cert"] = "" }, "ca_cert", "trusted", "not trusted"},
		{"a wrong secret", func(m map[string]any) { m["secret"] = "not-the-secret" }, "secret", "accepted", "refused the token (401)"},
	} {
		r := s.Call(t, "PUT", api, root, given(c.change))
		apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
		if want := `"field":"` + c.field + `","rule":"` + c.rule + `"`; !strings.Contains(string(r.Body), want) || !strings.Contains(string(r.Body), c.want) {
			t.Errorf("%s: got %s, want %s saying %q", c.name, r.Body, want, c.want)
		}
	}
	apptest.WantStatus(t, s.Call(t, "GET", api, root, nil), http.StatusNotFound)
	if pve.Asked.Load() != 0 {
		t.Fatal("the API was answered with the token before anything was saved")
	}

	// The page takes it, asks the API and shows what it said; the secret only as set.
	r = s.Submit(t, page, root, url.Values{"endpoint": {pve.URL}, "token_id": {pve.TokenID}, "secret": {pve.Secret}, "ca_cert": {pve.CA}})
	apptest.WantStatus(t, r, http.StatusSeeOther)
	if loc := r.Header.Get("Location"); loc != page+"?saved=1" {
		t.Fatalf("saving sends to %q", loc)
	}
	r = s.Call(t, "GET", page+"?saved=1", root, nil)
	apptest.WantStatus(t, r, http.StatusOK)
	apptest.WantIn(t, r, `data-testid="proxmox-access-saved"`, `data-testid="proxmox-endpoint">`+pve.URL+`<`,
		`data-testid="proxmox-token-id">`+pve.TokenID+`<`, `data-testid="proxmox-secret">set<`, `data-testid="proxmox-version">8.4.1<`)
	if strings.Contains(string(r.Body), pve.Secret) {
		t.Fatal("the page shows the token's secret")
	}
	got := s.Call(t, "GET", api, root, nil)
	apptest.WantStatus(t, got, http.StatusOK)
	if m := got.JSON(t); m["endpoint"] != pve.URL || m["token_id"] != pve.TokenID || m["secret"] != "set" || m["version"] != "8.4.1" {
		t.Fatalf("the zone's access: %v", m)
	}
	if strings.Contains(string(got.Body), pve.Secret) {
		t.Fatal("the API shows the token's secret")
	}
	apptest.WantStatus(t, s.Call(t, "POST", api+"/check", root, nil), http.StatusOK)
	// Refused on the page too, the secret never echoed.
	r = s.Submit(t, page, root, url.Values{"endpoint": {pve.URL}, "token_id": {pve.TokenID}, "secret": {"wrong-" + pve.Secret}})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantIn(t, r, `data-field-error="ca_cert"`, "not trusted")
	if strings.Contains(string(r.Body), pve.Secret) {
		t.Fatal("the refused form echoes the secret")
	}

	// Tenants see none of it.
	apptest.WantStatus(t, s.Call(t, "GET", api, tenantAdmin, nil), http.StatusNotFound)
	apptest.WantStatus(t, s.Call(t, "GET", page, tenantAdmin, nil), http.StatusNotFound)
	apptest.WantStatus(t, s.Call(t, "PUT", api, tenantAdmin, given(func(map[string]any) {})), http.StatusNotFound)

	// The secret is sealed: in no table, and in no log, in the clear.
	if where := s.TablesHolding(t, pve.Secret); len(where) > 0 {
		t.Fatalf("the token's secret is in the clear in %v", where)
	}
	if strings.Contains(s.Logs.String(), pve.Secret) {
		t.Fatal("the server's log holds the token's secret")
	}

	// An API that stops answering is said to, and the access keeps its last check.
	pve.Stop()
	r = s.Call(t, "POST", api+"/check", root, nil)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantProblem(t, r, "endpoint", "reachable")
	apptest.WantStatus(t, s.Call(t, "DELETE", api, root, nil), http.StatusNoContent)
	apptest.WantStatus(t, s.Call(t, "GET", api, root, nil), http.StatusNotFound)
}
