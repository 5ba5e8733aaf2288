package landingzone_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"nimbus/app/apptest"
)

// The template form offers a machine's network_id as a choice of the rows above it whose
// component is a network, not of every row: both as a row's inputs are laid out when its
// component is chosen and when a refused form comes back. A row naming a machine for it is
// refused beside its field; the saved template lists what each member names.
func TestPages_TemplateFormOffersEarlierNetworksForANetworkInput(t *testing.T) {
	s := apptest.NewSite(t)
	ids := apptest.BuiltinIDs(t, s)
	net, machine := ids["simcloud-network"], ids["simcloud-machine"]
	root := apptest.NewBrowser(t, s.URL)
	root.SignIn(t, "root@example.com", "correct horse battery")
	root.Get(t, "/landing-zones")
	r := root.Post(t, "/landing-zones", url.Values{"_csrf": {root.CSRF}, "name": {"sim"}, "provider": {"simcloud"}})
	apptest.WantStatus(t, r, http.StatusSeeOther)
	zone := r.Header.Get("Location")
	row := func(i, field string) string { return "mandatory_components[" + i + "]." + field }

	// Choosing the third row's machine lays out its network_id as a choice of the network above.
	q := url.Values{"row": {row("2", "")}, row("2", "component_id"): {machine},
		row("0", "component_id"): {net}, row("0", "name"): {"core"}, row("1", "component_id"): {machine}, row("1", "name"): {"web"}}
	r = root.Get(t, zone+"/inputs?"+q.Encode())
	apptest.WantStatus(t, r, http.StatusOK)
	if got := options(t, string(r.Body), row("2", "refers.network_id")); strings.Join(got, "|") != "|core" {
		t.Fatalf("the third row's network_id offers %q, want only the network above it", got)
	}
	if page := string(root.Get(t, zone).Body); !strings.Contains(page, `hx-include="[name$=&#34;].component_id&#34;], [name$=&#34;].name&#34;], [name*=&#34;].refers.&#34;]"`) {
		t.Fatalf("a row's component choice does not send the rows around it: %.3000s", page)
	}

	// Choosing the first row's network, or naming it, lays out again the rows after it, keeping
	// what they chose, each in place of its own.
	q = url.Values{"row": {row("0", "")}, row("0", "component_id"): {net}, row("0", "name"): {"core"},
		row("1", "component_id"): {machine}, row("1", "name"): {"web"}, row("1", "refers.network_id"): {"core"}, row("1", "p.name"): {"web"}}
	for _, path := range []string{"/inputs", "/refers"} {
		r = root.Get(t, zone+path+"?"+q.Encode())
		apptest.WantStatus(t, r, http.StatusOK)
		frag := string(r.Body)
		if got := options(t, frag, row("1", "refers.network_id")); strings.Join(got, "|") != "|core" || !strings.Contains(frag, `<option value="core" selected>`) {
			t.Fatalf("%s: the second row's network_id offers %q, want the network above it, chosen: %s", path, got, frag)
		}
		for _, want := range []string{`id="refers-` + row("1", "") + `" class="refers" hx-swap-oob="innerHTML"`, `id="refers-` + row("2", "") + `" class="refers" hx-swap-oob="innerHTML"`} {
			if !strings.Contains(frag, want) {
				t.Fatalf("%s: no %s in %s", path, want, frag)
			}
		}
		if strings.Contains(frag, row("1", "p.name")) {
			t.Fatalf("%s: the second row's other inputs are sent again, losing what is typed: %s", path, frag)
		}
	}

	form := url.Values{"_csrf": {root.CSRF}, "name": {"nets"},
		row("0", "component_id"): {net}, row("0", "name"): {"core"}, row("0", "p.name"): {"core"},
		row("1", "component_id"): {machine}, row("1", "name"): {"web"}, row("1", "p.name"): {"web"}, row("1", "refers.network_id"): {"core"},
		row("2", "component_id"): {machine}, row("2", "name"): {"db"}, row("2", "p.name"): {"db"}, row("2", "refers.network_id"): {"web"}}
	r = root.Post(t, zone+"/templates", form)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	page := string(r.Body)
	if !strings.Contains(page, `data-field-error="`+row("2", "refers.network_id")+`"`) {
		t.Fatalf("no problem beside the third row's network_id: %.3000s", page)
	}
	if got := options(t, page, row("2", "refers.network_id")); strings.Join(got, "|") != "|core|web" || !strings.Contains(page, "web (does not fit)") {
		t.Fatalf("the refused row's network_id offers %q, want the network and the refused choice kept", got)
	}
	if got := options(t, page, row("1", "refers.network_id")); strings.Join(got, "|") != "|core" {
		t.Fatalf("the second row's network_id offers %q", got)
	}

	form.Set(row("2", "refers.network_id"), "core")
	apptest.WantStatus(t, root.Post(t, zone+"/templates", form), http.StatusSeeOther)
	apptest.WantIn(t, root.Get(t, zone), `data-key="network_id"`, "output of core")
}

// The system-service form offers a machine's network_id as a choice of the zone's networks
// among its system services, as the template form does of the rows above: both as its inputs
// are laid out when its component is chosen and when a refused form comes back. Naming a
// machine for it is refused beside its field, as the API refuses it; the service saved lists
// what it names.
func TestPages_SystemServiceFormOffersTheZonesNetworksForANetworkInput(t *testing.T) {
	s := apptest.NewSite(t)
	ids := apptest.BuiltinIDs(t, s)
	net, machine := ids["simcloud-network"], ids["simcloud-machine"]
	root := apptest.NewBrowser(t, s.URL)
	root.SignIn(t, "root@example.com", "correct horse battery")
	root.Get(t, "/landing-zones")
	r := root.Post(t, "/landing-zones", url.Values{"_csrf": {root.CSRF}, "name": {"sim"}, "provider": {"simcloud"}})
	apptest.WantStatus(t, r, http.StatusSeeOther)
	zone := r.Header.Get("Location")
	for _, m := range []struct{ name, component string }{{"core", net}, {"mon", machine}, {"edge", net}} {
		apptest.WantStatus(t, root.Post(t, zone+"/system-services", url.Values{"_csrf": {root.CSRF}, "component_id": {m.component},
			"name": {m.name}, "p.name": {m.name}}), http.StatusSeeOther)
	}

	r = root.Get(t, zone+"/inputs?"+url.Values{"row": {""}, "component_id": {machine}}.Encode())
	apptest.WantStatus(t, r, http.StatusOK)
	if got := options(t, string(r.Body), "refers.network_id"); strings.Join(got, "|") != "|core|edge" {
		t.Fatalf("a new machine's network_id offers %q, want the zone's networks", got)
	}
	form := url.Values{"_csrf": {root.CSRF}, "component_id": {machine}, "name": {"dns"}, "p.name": {"dns"}, "refers.network_id": {"mon"}}
	r = root.Post(t, zone+"/system-services", form)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	page := string(r.Body)
	if !strings.Contains(page, `data-field-error="refers.network_id"`) || !strings.Contains(page, "mon is a VirtualMachine") {
		t.Fatalf("no problem beside the machine's network_id: %.3000s", page)
	}
	if got := options(t, page, "refers.network_id"); strings.Join(got, "|") != "|core|edge|mon" || !strings.Contains(page, "mon (does not fit)") {
		t.Fatalf("the refused service's network_id offers %q, want the networks and the refused choice kept", got)
	}

	form.Set("refers.network_id", "edge")
	apptest.WantStatus(t, root.Post(t, zone+"/system-services", form), http.StatusSeeOther)
	apptest.WantIn(t, root.Get(t, zone), `data-testid="system-services-dns"`, "output of edge")

	// The network dns names stays while dns does.
	var edge string
	apptest.Must(t, s.Pool.QueryRow(t.Context(), `SELECT id::text FROM template_components WHERE name = 'edge'`).Scan(&edge))
	r = root.Post(t, zone+"/system-services/"+edge+"/remove", url.Values{"_csrf": {root.CSRF}})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantIn(t, r, "system service dns takes its network_id from edge: remove dns first")
}

// options are the values of the select named name.
func options(t *testing.T, page, name string) []string {
	t.Helper()
	sel := regexp.MustCompile(`(?s)<select[^>]* name="` + regexp.QuoteMeta(name) + `"[^>]*>(.*?)</select>`).FindStringSubmatch(page)
	if sel == nil {
		t.Fatalf("no select %s in %.3000s", name, page)
	}
	var out []string
	for _, m := range regexp.MustCompile(`<option value="([^"]*)"`).FindAllStringSubmatch(sel[1], -1) {
		out = append(out, m[1])
	}
	return out
}
