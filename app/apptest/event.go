package apptest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"nimbus/app/orchestration/event"
)

// EventSource is a webhook source of the draft zone.
func (w *World) EventSource(t *testing.T) event.Created {
	return Fixture(w, "eventSource", func() event.Created {
		src, err := event.NewService(w.Pool, w.Keys).CreateSource(context.Background(), w.Admin, w.DraftZone(t).Zone.ID,
			event.NewSource{Name: "alerts", Kind: event.Webhook})
		Must(t, err)
		return src
	})
}

// LoggedEvent is an event of the log that reached tenant A.
func (w *World) LoggedEvent(t *testing.T) uuid.UUID {
	return Fixture(w, "loggedEvent", func() uuid.UUID {
		var id uuid.UUID
		Must(t, w.Pool.QueryRow(context.Background(), `INSERT INTO event_log (source_kind, event_id, type, payload, tenant_id, outcome)
			VALUES ('webhook', 'e-1', 'alert.firing', '{}', $1, 'unmatched') RETURNING id`, w.A.ID).Scan(&id))
		return id
	})
}

// Subscription is tenant A's subscription, made by its admin.
func (w *World) Subscription(t *testing.T) event.NewSubscribed {
	return Fixture(w, "subscription", func() event.NewSubscribed {
		sub, err := event.NewService(w.Pool, w.Keys).Subscribe(context.Background(), w.AdminA,
			event.NewSubscription{TenantID: &w.A.ID, Name: "hooks", URL: "https://hooks.example.com/nimbus"})
		Must(t, err)
		return sub
	})
}

// Webhook makes a webhook source in a new landing zone and returns the zone, the source's
// receiving path and its secret.
func Webhook(t testing.TB, s *Site, name string) (zone, path, secret string) {
	t.Helper()
	root := s.Token(t, s.Admin)
	r := s.Call(t, "POST", "/api/v1/landing-zones", root, map[string]any{"name": name, "provider": "simcloud"})
	WantStatus(t, r, http.StatusCreated)
	zone = r.JSON(t)["id"].(string)
	r = s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/event-sources", root, map[string]any{"name": "alerts", "kind": "webhook"})
	WantStatus(t, r, http.StatusCreated)
	src := r.JSON(t)
	return zone, src["url"].(string), src["secret"].(string)
}

// Alertmanager is a notification of Alertmanager's webhook (version 4) with one alert per set
// of labels, firing.
func Alertmanager(labels ...string) []byte {
	var alerts []string
	for i, l := range labels {
		alerts = append(alerts, fmt.Sprintf(`{"status":"firing","labels":{%s},"annotations":{"summary":"it broke","runbook_token":"hunter2"},
			"startsAt":"2026-11-27T01:00:00Z","endsAt":"0001-01-01T00:00:00Z","generatorURL":"http://prometheus:9090/graph","fingerprint":"f%d%x"}`, l, i, len(l)))
	}
	return []byte(`{"version":"4","groupKey":"{}:{alertname=\"Down\"}","truncatedAlerts":0,"status":"firing","receiver":"nimbus",
		"groupLabels":{"alertname":"Down"},"commonLabels":{"alertname":"Down"},"commonAnnotations":{},"externalURL":"http://alertmanager:9093",
		"alerts":[` + strings.Join(alerts, ",") + `]}`)
}

// Signed returns the headers of a request signed with secret at at.
func Signed(secret string, at time.Time, body []byte, contentType string) []string {
	return []string{"Content-Type", contentType, event.TimestampHeader, fmt.Sprint(at.Unix()), event.SignatureHeader, event.Sign([]byte(secret), at, body)}
}

// LoggedEvents waits until the log holds n events that came into the zone (not Nimbus's own)
// and none is waiting to be routed, and returns them.
func (s *Site) LoggedEvents(t *testing.T, token, zone string, n int) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	var got []map[string]any
	for time.Now().Before(deadline) {
		got = got[:0]
		pending := 0
		for next := ""; ; {
			r := s.Call(t, "GET", "/api/v1/events?limit=200&landing_zone_id="+zone+"&after="+next, token, nil)
			WantStatus(t, r, http.StatusOK)
			page := r.JSON(t)
			for _, e := range page["events"].([]any) {
				m := e.(map[string]any)
				if m["source_kind"] == event.Nimbus {
					continue // what Nimbus tells of its own changes
				}
				got = append(got, m)
				if m["outcome"] == event.Pending {
					pending++
				}
			}
			if next, _ = page["next"].(string); next == "" {
				break
			}
		}
		if len(got) >= n && pending == 0 {
			return got
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the log holds %d events of the zone, want %d routed", len(got), n)
	return nil
}
