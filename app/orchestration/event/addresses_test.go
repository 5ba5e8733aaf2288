package event_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"nimbus/app/apptest"
	"nimbus/app/kernel/egress/egresstest"
	"nimbus/app/kernel/outbox"
	"nimbus/app/orchestration/event"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// TestEvents_ASubscriptionToASpecialPurposeAddressIsRefused subscribes through the API to an
// address of each kind the IANA registries set apart: refused with 422 naming the field, the
// rule and the range; the private-address setting opens the operator's own networks only.
func TestEvents_ASubscriptionToASpecialPurposeAddressIsRefused(t *testing.T) {
	cases := []struct {
		url, in string
		// private: allowed when the server lets deliveries reach private addresses.
		private bool
	}{
		{"https://192.0.2.2/hook", "192.0.2.0/24, documentation (TEST-NET-1)", false},
		{"https://198.51.100.7/hook", "198.51.100.0/24, documentation (TEST-NET-2)", false},
		{"https://203.0.113.9:8443/hook", "203.0.113.0/24, documentation (TEST-NET-3)", false},
		{"https://[2001:db8::1]/hook", "2001:db8::/32, documentation", false},
		{"https://[3fff::1]/hook", "3fff::/20, documentation", false},
		{"https://[64:ff9b:1:808:8:800::]/hook", "64:ff9b:1::/48, IPv4-IPv6 translation, local use", true},
		{"https://[64:ff9b::c000:202]/hook", "192.0.2.0/24, documentation (TEST-NET-1)", false},
		{"https://[2002:c000:202::1]/hook", "192.0.2.0/24, documentation (TEST-NET-1)", false},
		// Teredo whose client (inverted in the last bytes) is 192.0.2.45.
		{"https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/hook", "192.0.2.0/24, documentation (TEST-NET-1)", false},
		{"https://[::8.8.8.8]/hook", "::/96, IPv4-compatible address (deprecated)", false},
		{"https://[::ffff:192.0.2.2]/hook", "192.0.2.0/24, documentation (TEST-NET-1)", false},
		{"https://192.31.196.1/hook", "192.31.196.0/24, AS112-v4", false},
		{"https://192.52.193.1/hook", "192.52.193.0/24, AMT", false},
		{"https://192.88.99.1/hook", "192.88.99.0/24, deprecated (6to4 relay anycast)", false},
		{"https://192.175.48.1/hook", "192.175.48.0/24, direct delegation AS112 service", false},
		{"https://198.18.0.1/hook", "198.18.0.0/15, benchmarking", false},
		{"https://240.0.0.1/hook", "240.0.0.0/4, reserved", false},
		{"https://0.0.0.0/hook", "0.0.0.0/32, this host on this network", false},
		{"https://3221225986/hook", "an IPv4 address in an old form", false},
		{"https://127.0.0.1:8080/hook", "127.0.0.0/8, loopback", true},
		{"https://localhost/hook", "127.0.0.0/8, loopback", true},
		{"https://10.1.2.3/hook", "10.0.0.0/8, private-use", true},
		{"https://169.254.169.254/hook", "169.254.0.0/16, link-local", true},
		{"https://[fd00::1]/hook", "fc00::/7, unique-local", true},
		{"https://[fe80::1%25eth0]/hook", "fe80::/10, link-local unicast", true},
	}
	for _, private := range []bool{false, true} {
		s := apptest.NewSiteWith(t, apptest.SiteConfig{Backend: "file", Deliveries: event.DeliveryConfig{AllowPrivate: private}})
		admin := s.Token(t, s.AdminA)
		for i, c := range cases {
			r := s.Call(t, "POST", "/api/v1/event-subscriptions", admin, map[string]any{"tenant_id": s.A.ID, "name": "hook-" + strconv.Itoa(i), "url": c.url})
			if private && c.private {
				apptest.WantStatus(t, r, http.StatusCreated)
				continue
			}
			if r.Status != http.StatusUnprocessableEntity {
				t.Errorf("%s (private addresses allowed: %v): %d %s, want 422", c.url, private, r.Status, r.Body)
				continue
			}
			var body struct {
				Errors []struct{ Field, Rule, Message string }
			}
			apptest.Must(t, json.Unmarshal(r.Body, &body))
			if len(body.Errors) != 1 || body.Errors[0].Field != "url" || body.Errors[0].Rule != "address" || !strings.Contains(body.Errors[0].Message, c.in) {
				t.Errorf("%s (private addresses allowed: %v): %s, want the field url refused by the rule address naming %q", c.url, private, r.Body, c.in)
			}
		}
		// A name is taken: it is checked against what it resolves to each time it is dialled.
		apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/event-subscriptions", admin, map[string]any{"tenant_id": s.A.ID, "name": "named",
			"url": "https://hooks.example.com/nimbus"}), http.StatusCreated)
		// The page's form is held to the same rule.
		r := s.Submit(t, "/tenants/"+s.A.ID.String()+"/event-subscriptions", admin, url.Values{"name": {"paged"}, "url": {"https://192.0.2.2/"}})
		apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
		apptest.WantIn(t, r, `data-field-error="url"`, "192.0.2.0/24, documentation (TEST-NET-1)")
	}
}

// TestEvents_ADeliveryToANameResolvingToASpecialPurposeAddressIsRefusedWhenDialled points a
// subscription's name at TEST-NET-1 after it was saved: the delivery is refused as it is
// dialled, and its log says so in plain words, even with private addresses allowed.
func TestEvents_ADeliveryToANameResolvingToASpecialPurposeAddressIsRefusedWhenDialled(t *testing.T) {
	receiver := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		t.Error("the receiver was reached")
	}))
	defer receiver.Close()
	resolver := egresstest.Resolver(t, map[string][]netip.Addr{"hooks.example.com": {netip.MustParseAddr("192.0.2.2")}})
	s := apptest.NewSiteWith(t, apptest.SiteConfig{Backend: "file", Deliveries: event.DeliveryConfig{AllowPrivate: true, Resolver: resolver,
		TLS: receiver.Client().Transport.(*http.Transport).TLSClientConfig, Backoff: time.Hour}})
	admin := s.Token(t, s.AdminA)
	_, port, _ := net.SplitHostPort(receiver.Listener.Addr().String())
	r := s.Call(t, "POST", "/api/v1/event-subscriptions", admin, map[string]any{"tenant_id": s.A.ID, "name": "renamed",
		"url": "https://hooks.example.com:" + port + "/hook"})
	apptest.WantStatus(t, r, http.StatusCreated)
	id := r.JSON(t)["id"].(string)

	apptest.Must(t, db.Tx(context.Background(), s.Pool, func(q *dbgen.Queries) error {
		return outbox.Emit(context.Background(), q, outbox.Event{Type: "backup.done", Subject: "db-1", Tenant: s.A.ID})
	}))
	var attempts []any
	for deadline := time.Now().Add(time.Minute); len(attempts) == 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no attempt was made in a minute")
		}
		r = s.Call(t, "GET", "/api/v1/event-subscriptions/"+id+"/deliveries", admin, nil)
		apptest.WantStatus(t, r, http.StatusOK)
		if list := r.JSON(t)["deliveries"].([]any); len(list) > 0 {
			attempts = list[0].(map[string]any)["attempts"].([]any)
		}
	}
	a := attempts[0].(map[string]any)
	if want := "the address is not allowed: 192.0.2.0/24, documentation (TEST-NET-1)"; a["error"] != want || a["status_code"] != nil {
		t.Fatalf("the attempt: %v, want no answer and the error %q", a, want)
	}
	if !strings.Contains(s.Logs.String(), "192.0.2.2 is in 192.0.2.0/24") {
		t.Fatal("the server's log does not say which address was refused")
	}
}
