package event_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"nimbus/app/apptest"
	"nimbus/app/orchestration/environment"
	"nimbus/app/orchestration/event"
)

// received is one delivery as a receiver saw it.
type received struct {
	path   string
	header http.Header
	body   []byte
}

func TestEvents_SubscriptionsGetSignedEventsAndOneThatKeepsFailingIsTurnedOff(t *testing.T) {
	got := make(chan received, 100)
	good := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- received{path: r.URL.Path, header: r.Header.Clone(), body: body}
	}))
	defer good.Close()
	bad := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	}))
	defer bad.Close()
	tlsConfig := good.Client().Transport.(*http.Transport).TLSClientConfig
	s := apptest.NewSiteWith(t, apptest.SiteConfig{Backend: "file", Deliveries: event.DeliveryConfig{AllowPrivate: true, TLS: tlsConfig,
		Backoff: 20 * time.Millisecond, DisableAfter: 3, FailingFor: -1}})
	admin, user := s.Token(t, s.AdminA), s.Token(t, s.UserA)

	// Tenant admins subscribe their tenant; only provider admins subscribe every tenant.
	r := s.Call(t, "POST", "/api/v1/event-subscriptions", admin, map[string]any{"tenant_id": s.A.ID, "name": "plain", "url": "http://example.com/hook"})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), `"field":"url"`) {
		t.Fatalf("an http URL: %s", r.Body)
	}
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/event-subscriptions", admin, map[string]any{"name": "all", "url": good.URL}), http.StatusForbidden)
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/event-subscriptions", user, map[string]any{"tenant_id": s.A.ID, "name": "mine", "url": good.URL}), http.StatusForbidden)
	r = s.Call(t, "POST", "/api/v1/event-subscriptions", admin, map[string]any{"tenant_id": s.A.ID, "name": "states", "url": good.URL + "/hook",
		"types": []string{"stack.state_changed"}})
	apptest.WantStatus(t, r, http.StatusCreated)
	secret := r.JSON(t)["secret"].(string)
	// Another tenant's subscription hears nothing of tenant A.
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/event-subscriptions", s.Token(t, s.AdminB), map[string]any{"tenant_id": s.B.ID, "name": "nosy",
		"url": good.URL + "/nosy"}), http.StatusCreated)
	r = s.Call(t, "POST", "/api/v1/event-subscriptions", admin, map[string]any{"tenant_id": s.A.ID, "name": "flaky", "url": bad.URL,
		"types": []string{"deployment.*"}})
	apptest.WantStatus(t, r, http.StatusCreated)
	flaky := r.JSON(t)["id"].(string)

	// A stack instance deployed: it enters its first state, and tells the subscription.
	stackID := apptest.PublishedStack(t, s, "told", alertStack(t, s))
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "told")
	apptest.Must(t, err)
	r = s.Call(t, "POST", "/api/v1/stack-instances", user, map[string]any{"stack_id": stackID, "environment_id": env.ID, "name": "told"})
	apptest.WantStatus(t, r, http.StatusAccepted)
	id := r.JSON(t)["id"].(string)
	s.WaitInstance(t, user, id, apptest.Status("active", "failed"))
	var d received
	select {
	case d = <-got:
	case <-time.After(2 * time.Minute):
		t.Fatal("the subscription received nothing in two minutes")
	}
	if d.header.Get("Content-Type") != "application/cloudevents+json" {
		t.Fatalf("delivered as %s", d.header.Get("Content-Type"))
	}
	sec, _ := strconv.ParseInt(d.header.Get(event.TimestampHeader), 10, 64)
	if want := event.Sign([]byte(secret), time.Unix(sec, 0), d.body); d.header.Get(event.SignatureHeader) != want {
		t.Fatalf("the signature %q does not hold (want %q)", d.header.Get(event.SignatureHeader), want)
	}
	var ce struct {
		SpecVersion, ID, Source, Type, Subject string
		Data                                   struct {
			Instance string         `json:"stack_instance_id"`
			Data     map[string]any `json:"data"`
		}
	}
	apptest.Must(t, json.Unmarshal(d.body, &ce))
	if ce.SpecVersion != "1.0" || ce.Type != "stack.state_changed" || ce.Subject != "told" || ce.Data.Instance != id || ce.Data.Data["to"] != "active" {
		t.Fatalf("the delivered event: %s", d.body)
	}

	// The failing receiver is tried again, then turned off with a notice; each attempt is kept.
	var sub map[string]any
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		for _, x := range s.Call(t, "GET", "/api/v1/event-subscriptions?tenant_id="+s.A.ID.String(), admin, nil).JSON(t)["subscriptions"].([]any) {
			if m := x.(map[string]any); m["id"] == flaky {
				sub = m
			}
		}
		if sub["active"] == false {
			break
		}
	}
	if sub["active"] != false || !strings.Contains(fmt.Sprint(sub["disabled_reason"]), "503") {
		var jobs []string
		for _, l := range strings.Split(s.Logs.String(), "\n") {
			if strings.Contains(l, "event_delivery") || strings.Contains(l, "event_sweep") {
				jobs = append(jobs, l)
			}
		}
		t.Fatalf("the failing subscription: %v\n%s", sub, strings.Join(jobs, "\n"))
	}
	r = s.Call(t, "GET", "/api/v1/event-subscriptions/"+flaky+"/deliveries", admin, nil)
	apptest.WantStatus(t, r, http.StatusOK)
	attempts := 0
	for _, x := range r.JSON(t)["deliveries"].([]any) {
		for _, a := range x.(map[string]any)["attempts"].([]any) {
			attempts++
			if a.(map[string]any)["status_code"] != 503.0 {
				t.Fatalf("an attempt: %v", a)
			}
		}
	}
	if attempts != 3 {
		t.Fatalf("%d attempts recorded, want 3: %s", attempts, r.Body)
	}
	apptest.WantStatus(t, s.Call(t, "GET", "/api/v1/event-subscriptions/"+flaky+"/deliveries", s.Token(t, s.AdminB), nil), http.StatusNotFound)
	for len(got) > 0 {
		if d := <-got; d.path == "/nosy" {
			t.Fatalf("tenant B's subscription received tenant A's event: %s", d.body)
		}
	}
	r = s.Call(t, "GET", "/api/v1/events?type=subscription.disabled", admin, nil)
	if !strings.Contains(string(r.Body), `"subject":"flaky"`) {
		t.Fatalf("no notice of the subscription turned off: %s", r.Body)
	}
}
