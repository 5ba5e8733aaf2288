package event_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"nimbus/app/apptest"
	"nimbus/app/kernel/outbox"
	"nimbus/app/orchestration/event"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// shownSecret is the secret a page shows once, or "" when it shows none.
func shownSecret(r apptest.Reply) string {
	m := regexp.MustCompile(`data-testid="new-secret">([^<]+)<`).FindSubmatch(r.Body)
	if m == nil {
		return ""
	}
	return string(m[1])
}

func TestEventPages_AProviderAdminManagesAZonesSources(t *testing.T) {
	s := apptest.NewSite(t)
	root, tenantAdmin := s.Token(t, s.Admin), s.Token(t, s.AdminA)
	r := s.Call(t, "POST", "/api/v1/landing-zones", root, map[string]any{"name": "hooked", "provider": "simcloud"})
	apptest.WantStatus(t, r, http.StatusCreated)
	zone := r.JSON(t)["id"].(string)
	page := "/landing-zones/" + zone + "/event-sources"
	apptest.WantIn(t, s.Call(t, "GET", "/landing-zones/"+zone, root, nil), `href="`+page+`"`)

	// Bad input is refused beside its field, with what was typed kept.
	r = s.Submit(t, page, root, url.Values{"name": {"Bad Name!"}, "kind": {"webhook"}})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantIn(t, r, `data-field-error="name"`, `value="Bad Name!"`)
	r = s.Submit(t, page, root, url.Values{"name": {"pve"}, "kind": {"cloud_provider"}, "config": {`{"provider": "proxmox"}`}})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantIn(t, r, `data-field-error="config"`, "url: must be the Proxmox API", "node: ", `data-field-error="secret"`)
	r = s.Submit(t, page, root, url.Values{"name": {"pve"}, "kind": {"cloud_provider"}, "config": {"nope"}})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantIn(t, r, `data-field-error="config"`)
	r = s.Submit(t, page, root, url.Values{"name": {"odd"}, "kind": {"carrier-pigeon"}})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantIn(t, r, `data-field-error="kind"`)

	// A webhook's secret and URL are shown once, and work.
	r = s.Submit(t, page, root, url.Values{"name": {"alerts"}, "kind": {"webhook"}})
	apptest.WantStatus(t, r, http.StatusOK)
	secret := shownSecret(r)
	if secret == "" {
		t.Fatalf("the new source's secret is not shown:\n%s", r.Body)
	}
	apptest.WantIn(t, r, s.URL+"/api/v1/events/", "http_config", "credentials")
	list := s.Call(t, "GET", "/api/v1/landing-zones/"+zone+"/event-sources", root, nil).JSON(t)["event_sources"].([]any)
	src := list[0].(map[string]any)
	id, path := src["id"].(string), src["url"].(string)
	body := []byte(`{"type":"backup.failed","subject":"db-1"}`)
	apptest.WantStatus(t, s.Send(t, path, body, "Content-Type", "application/json", "Authorization", "Bearer "+secret), http.StatusAccepted)
	r = s.Call(t, "GET", page, root, nil)
	apptest.WantStatus(t, r, http.StatusOK)
	apptest.WantIn(t, r, `data-testid="source-alerts" data-active="true"`, s.URL+path)
	if shownSecret(r) != "" || strings.Contains(string(r.Body), secret) {
		t.Fatal("the secret is shown a second time")
	}

	// A new secret replaces the old at once, and is shown once.
	r = s.Submit(t, "/event-sources/"+id+"/secret", root, url.Values{})
	apptest.WantStatus(t, r, http.StatusOK)
	rotated := shownSecret(r)
	if rotated == "" || rotated == secret {
		t.Fatalf("the new secret %q (was %q)", rotated, secret)
	}
	apptest.WantStatus(t, s.Send(t, path, body, "Content-Type", "application/json", "Authorization", "Bearer "+secret), http.StatusUnauthorized)
	apptest.WantStatus(t, s.Send(t, path, []byte(`{"type":"backup.failed","subject":"db-2"}`), "Content-Type", "application/json",
		"Authorization", "Bearer "+rotated), http.StatusAccepted)
	if strings.Contains(string(s.Call(t, "GET", page, root, nil).Body), rotated) {
		t.Fatal("the new secret is shown a second time")
	}

	// Turned off, its events are refused; a bad switch is refused, not a failure.
	apptest.WantStatus(t, s.Submit(t, "/event-sources/"+id+"/active", root, url.Values{"active": {"maybe"}}), http.StatusUnprocessableEntity)
	r = s.Submit(t, "/event-sources/"+id+"/active", root, url.Values{"active": {"false"}})
	apptest.WantStatus(t, r, http.StatusSeeOther)
	if r.Header.Get("Location") != page {
		t.Fatalf("turned off, the page goes to %s", r.Header.Get("Location"))
	}
	apptest.WantIn(t, s.Call(t, "GET", page, root, nil), `data-testid="source-alerts" data-active="false"`)
	apptest.WantStatus(t, s.Send(t, path, body, "Content-Type", "application/json", "Authorization", "Bearer "+rotated), http.StatusForbidden)

	// Tenant admins see neither the zone's sources nor the sources themselves.
	for _, p := range []string{page, "/event-sources/" + id + "/secret", "/event-sources/" + id + "/delete"} {
		method := "POST"
		if p == page {
			method = "GET"
		}
		apptest.WantStatus(t, s.Ask(t, method, p, tenantAdmin), http.StatusNotFound)
	}

	r = s.Submit(t, "/event-sources/"+id+"/delete", root, url.Values{})
	apptest.WantStatus(t, r, http.StatusSeeOther)
	r = s.Call(t, "GET", page, root, nil)
	if strings.Contains(string(r.Body), "source-alerts") {
		t.Fatal("the deleted source is still listed")
	}
	apptest.WantStatus(t, s.Submit(t, "/event-sources/"+id+"/delete", root, url.Values{}), http.StatusNotFound)
}

func TestEventPages_ATenantAdminSubscribesAndSeesTheDeliveries(t *testing.T) {
	var calls atomic.Int32
	// The first delivery fails once, then the receiver takes it.
	good := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			http.Error(w, "warming up", http.StatusServiceUnavailable)
		}
	}))
	defer good.Close()
	bad := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	}))
	defer bad.Close()
	s := apptest.NewSiteWith(t, apptest.SiteConfig{Backend: "file", Deliveries: event.DeliveryConfig{AllowPrivate: true,
		TLS: good.Client().Transport.(*http.Transport).TLSClientConfig, Backoff: 20 * time.Millisecond, DisableAfter: 3, FailingFor: -1}})
	admin, user, otherAdmin, root := s.Token(t, s.AdminA), s.Token(t, s.UserA), s.Token(t, s.AdminB), s.Token(t, s.Admin)
	tenant := "/tenants/" + s.A.ID.String()
	page := tenant + "/event-subscriptions"
	apptest.WantIn(t, s.Call(t, "GET", tenant, admin, nil), `href="`+page+`"`)

	// Bad input is refused beside its field.
	r := s.Submit(t, page, admin, url.Values{"name": {"hooks"}, "url": {"http://example.com/hook"}, "types": {"deployment.*, [bad"}})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantIn(t, r, `data-field-error="url"`, `data-field-error="types"`, `&#34;[bad&#34;`)

	// Made, its secret is shown once; it is listed by host and types.
	r = s.Submit(t, page, admin, url.Values{"name": {"hooks"}, "url": {good.URL + "/hook?token=hunter2"}, "types": {"backup.*"}})
	apptest.WantStatus(t, r, http.StatusOK)
	secret := shownSecret(r)
	if secret == "" {
		t.Fatalf("the new subscription's secret is not shown:\n%s", r.Body)
	}
	apptest.WantStatus(t, s.Submit(t, page, admin, url.Values{"name": {"flaky"}, "url": {bad.URL}, "types": {"backup.*"}}), http.StatusOK)
	r = s.Call(t, "GET", page, admin, nil)
	apptest.WantStatus(t, r, http.StatusOK)
	apptest.WantIn(t, r, `data-testid="subscription-hooks" data-active="true"`, strings.TrimPrefix(good.URL, "https://"), "backup.*")
	if strings.Contains(string(r.Body), secret) || strings.Contains(string(r.Body), "hunter2") {
		t.Fatal("the list shows the secret or the URL's query")
	}
	subs := s.Call(t, "GET", "/api/v1/event-subscriptions?tenant_id="+s.A.ID.String(), admin, nil).JSON(t)["subscriptions"].([]any)
	ids := map[string]string{}
	for _, x := range subs {
		ids[x.(map[string]any)["name"].(string)] = x.(map[string]any)["id"].(string)
	}
	hooks := "/event-subscriptions/" + ids["hooks"]

	// An event of the tenant's is delivered: the second attempt takes; both are on the page.
	apptest.Must(t, db.Tx(context.Background(), s.Pool, func(q *dbgen.Queries) error {
		return outbox.Emit(context.Background(), q, outbox.Event{Type: "backup.done", Subject: "db-1", Tenant: s.A.ID})
	}))
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		r = s.Call(t, "GET", hooks, admin, nil)
		apptest.WantStatus(t, r, http.StatusOK)
		if strings.Contains(string(r.Body), `data-status="delivered"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing delivered in a minute:\n%s", r.Body)
		}
	}
	apptest.WantIn(t, r, "backup.done", "db-1", "HTTP 503", "HTTP 200", "the receiver answered 503")
	if i, j := strings.Index(string(r.Body), "HTTP 200"), strings.Index(string(r.Body), "HTTP 503"); i > j {
		t.Fatal("the attempts are not newest first")
	}

	// The one that keeps failing is turned off, and its list says why.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		r = s.Call(t, "GET", page, admin, nil)
		if strings.Contains(string(r.Body), `data-testid="subscription-flaky" data-active="false"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the failing subscription was not turned off:\n%s", r.Body)
		}
	}
	apptest.WantIn(t, r, `data-testid="disabled-reason"`, "503")

	// Turned off and on again from its page.
	r = s.Submit(t, hooks+"/active", admin, url.Values{"active": {"false"}})
	apptest.WantStatus(t, r, http.StatusSeeOther)
	apptest.WantIn(t, s.Call(t, "GET", page, admin, nil), `data-testid="subscription-hooks" data-active="false"`)
	apptest.WantStatus(t, s.Submit(t, hooks+"/active", admin, url.Values{"active": {"true"}}), http.StatusSeeOther)

	// A member without the right is refused; another tenant's admin finds nothing; provider
	// admins see it among every tenant's.
	apptest.WantStatus(t, s.Call(t, "GET", page, user, nil), http.StatusForbidden)
	apptest.WantStatus(t, s.Call(t, "GET", hooks, user, nil), http.StatusForbidden)
	apptest.WantStatus(t, s.Submit(t, page, user, url.Values{"name": {"mine"}, "url": {good.URL}}), http.StatusForbidden)
	apptest.WantStatus(t, s.Call(t, "GET", hooks, otherAdmin, nil), http.StatusNotFound)
	apptest.WantStatus(t, s.Call(t, "GET", page, otherAdmin, nil), http.StatusNotFound)
	if strings.Contains(string(s.Call(t, "GET", "/event-subscriptions", otherAdmin, nil).Body), "subscription-hooks") {
		t.Fatal("another tenant's admin sees the subscription in their list")
	}
	apptest.WantIn(t, s.Call(t, "GET", "/event-subscriptions", root, nil), "subscription-hooks", ">"+s.A.Name+"</a>", `data-testid="subscription-form"`)

	r = s.Submit(t, hooks+"/delete", admin, url.Values{})
	apptest.WantStatus(t, r, http.StatusSeeOther)
	if r.Header.Get("Location") != page {
		t.Fatalf("deleted, the page goes to %s", r.Header.Get("Location"))
	}
	apptest.WantStatus(t, s.Call(t, "GET", hooks, admin, nil), http.StatusNotFound)
}

func TestEventPages_AProviderAdminSubscribesToEveryTenant(t *testing.T) {
	s := apptest.NewSite(t)
	root := s.Token(t, s.Admin)
	apptest.WantIn(t, s.Call(t, "GET", "/events", root, nil), `href="/event-subscriptions"`)
	r := s.Submit(t, "/event-subscriptions", root, url.Values{"name": {"everything"}, "url": {"https://hooks.example.com/all"}})
	apptest.WantStatus(t, r, http.StatusOK)
	if shownSecret(r) == "" {
		t.Fatalf("the new subscription's secret is not shown:\n%s", r.Body)
	}
	apptest.WantIn(t, r, `data-testid="subscription-everything"`, "every tenant", "every type")
	// Tenant admins subscribe only their tenant: here they find no form, and a post is refused.
	admin := s.Token(t, s.AdminA)
	r = s.Call(t, "GET", "/event-subscriptions", admin, nil)
	apptest.WantStatus(t, r, http.StatusOK)
	if strings.Contains(string(r.Body), "subscription-everything") || strings.Contains(string(r.Body), `data-testid="subscription-form"`) {
		t.Fatalf("a tenant admin sees the provider's subscription or its form:\n%s", r.Body)
	}
	apptest.WantStatus(t, s.Submit(t, "/event-subscriptions", admin, url.Values{"name": {"all"}, "url": {"https://hooks.example.com/all"}}), http.StatusForbidden)
}
