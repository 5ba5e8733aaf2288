package event

import (
	"bytes"
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/egress"
	"nimbus/app/kernel/egress/egresstest"
	"nimbus/app/kernel/secrets"
	"nimbus/db/dbtest"
)

// TestDeliver_AFailureIsShownInPlainWords fails a delivery in each way a receiver can fail, and
// in each way an address can be refused as it is dialled (a name resolving into a special-purpose
// range): the delivery log shows one plain category, and the network's own words are only in the
// server's log.
func TestDeliver_AFailureIsShownInPlainWords(t *testing.T) {
	pool := dbtest.Pool(t)
	keys, err := secrets.Load(t.TempDir(), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int32
	failing := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, "internal trouble at 10.9.8.7", http.StatusInternalServerError)
	}))
	t.Cleanup(failing.Close)
	trusted := failing.Client().Transport.(*http.Transport).TLSClientConfig
	port := failing.Listener.Addr().(*net.TCPAddr).Port
	closed := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return ln.Addr().String()
	}()
	hangsUp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hangsUp.Close() })
	go func() {
		for {
			c, err := hangsUp.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	addr := netip.MustParseAddr
	resolver := egresstest.Resolver(t, map[string][]netip.Addr{
		"docs.example.com":   {addr("192.0.2.2")},
		"docs2.example.com":  {addr("198.51.100.7")},
		"docs3.example.com":  {addr("203.0.113.9")},
		"docs6.example.com":  {addr("2001:db8::2")},
		"nat64.example.com":  {addr("64:ff9b:1:c000:2:200::")},
		"mapped.example.com": {addr("::ffff:192.0.2.2")},
		"inside.example.com": {addr("127.0.0.1")},
	})
	at := func(host string) string { return "https://" + host + "/hook?token=hunter2" }
	named := func(name string) string { return at(net.JoinHostPort(name, strconv.Itoa(port))) }

	for _, c := range []struct {
		name, url    string
		allowPrivate bool
		tls          *tls.Config
		want         string
		// raw is a word of the network's that the server's log keeps.
		raw string
	}{
		{"an error answer", failing.URL, true, trusted, "the receiver answered 500", ""},
		{"a closed port", at(closed), true, trusted, egress.Unreachable, "connection refused"},
		{"a receiver that hangs up", at(hangsUp.Addr().String()), true, trusted, egress.ClosedEarly, hangsUp.Addr().String()},
		{"a certificate nobody signed", failing.URL, true, nil, egress.Untrusted, "certificate"},
		{"a name that does not resolve", named("nowhere.example.com"), true, trusted, egress.Unreachable, "no such host"},
		{"a name resolving to TEST-NET-1", named("docs.example.com"), true, trusted,
			"the address is not allowed: 192.0.2.0/24, documentation (TEST-NET-1)", "192.0.2.2 is in"},
		{"a name resolving to TEST-NET-2", named("docs2.example.com"), true, trusted,
			"the address is not allowed: 198.51.100.0/24, documentation (TEST-NET-2)", "198.51.100.7"},
		{"a name resolving to TEST-NET-3", named("docs3.example.com"), true, trusted,
			"the address is not allowed: 203.0.113.0/24, documentation (TEST-NET-3)", "203.0.113.9"},
		{"a name resolving to IPv6 documentation", named("docs6.example.com"), true, trusted,
			"the address is not allowed: 2001:db8::/32, documentation", "2001:db8::2"},
		{"a name resolving to local-use NAT64 of TEST-NET-1", named("nat64.example.com"), true, trusted,
			"the address is not allowed: 192.0.2.0/24, documentation (TEST-NET-1)", "carries 192.0.2.2"},
		{"a name resolving to a mapped TEST-NET-1", named("mapped.example.com"), true, trusted,
			"the address is not allowed: 192.0.2.0/24, documentation (TEST-NET-1)", "192.0.2.2"},
		{"a name resolving to loopback", named("inside.example.com"), false, trusted,
			"the address is not allowed: 127.0.0.0/8, loopback", "127.0.0.1 is in"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sub, delivery := uuid.New(), uuid.New()
			keyID, sealed, err := keys.Seal([]byte("hook-secret"), sub[:])
			if err != nil {
				t.Fatal(err)
			}
			exec := func(sql string, args ...any) {
				t.Helper()
				if _, err := pool.Exec(context.Background(), sql, args...); err != nil {
					t.Fatal(err)
				}
			}
			exec(`INSERT INTO event_subscriptions (id, name, url, secret, secret_key_id) VALUES ($1, $2, $3, $4, $5)`,
				sub, "s-"+sub.String()[:8], c.url, sealed, keyID)
			exec(`WITH e AS (INSERT INTO event_log (source_kind, event_id, type, subject, payload)
				VALUES ('nimbus', gen_random_uuid()::text, 'deployment.failed', 'web', '{}') RETURNING id)
				INSERT INTO event_deliveries (id, subscription_id, event_id) SELECT $1, $2, e.id FROM e`, delivery, sub)

			var logs bytes.Buffer
			w := NewDeliverer(pool, keys, DeliveryConfig{AllowPrivate: c.allowPrivate, TLS: c.tls, Resolver: resolver, DisableAfter: 1, FailingFor: -1},
				slog.New(slog.NewTextHandler(&logs, nil)))
			before := hits.Load()
			job := &river.Job[DeliverArgs]{JobRow: &rivertype.JobRow{Attempt: 1}, Args: DeliverArgs{Delivery: delivery}}
			if err := w.Work(context.Background(), job); err != nil {
				t.Fatalf("the subscription is turned off after one failure, so the job ends; it said %v", err)
			}

			deliveries, err := NewService(pool, keys).Deliveries(context.Background(), access.Principal{ProviderAdmin: true}, sub)
			if err != nil {
				t.Fatal(err)
			}
			if len(deliveries) != 1 || len(deliveries[0].Attempts) != 1 {
				t.Fatalf("deliveries: %+v", deliveries)
			}
			if got := deliveries[0].Attempts[0].Error; got != c.want {
				t.Fatalf("the delivery log shows %q, want %q", got, c.want)
			}
			var reason string
			if err := pool.QueryRow(context.Background(), `SELECT disabled_reason FROM event_subscriptions WHERE id = $1`, sub).Scan(&reason); err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(reason, "the last: "+c.want) {
				t.Fatalf("the subscription was turned off saying %q, want it to end with the plain words %q", reason, c.want)
			}
			if c.raw != "" && !strings.Contains(logs.String(), c.raw) {
				t.Fatalf("the server's log lacks %q:\n%s", c.raw, logs.String())
			}
			if strings.Contains(logs.String(), "hunter2") {
				t.Fatalf("the server's log shows the URL's query:\n%s", logs.String())
			}
			if strings.HasPrefix(c.want, "the address is not allowed") && hits.Load() != before {
				t.Fatal("the receiver was reached at an address that is not allowed")
			}
		})
	}
}
