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
	if page := string(root.Get(t, zone).Body); !strings.Contains(page, `hx-include="[name$=&#34;].component_id&#34;], [name$=&#34;].name&#34;]"`) {
		t.Fatalf("a row's component choice does not send the rows above it: %.3000s", page)
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
