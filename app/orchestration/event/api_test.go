package event_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"nimbus/app/apptest"
	"nimbus/app/domain/stack"
	"nimbus/app/orchestration/environment"
	"nimbus/app/orchestration/event"
)

// cloudEvent is a structured-mode CloudEvent.
func cloudEvent(id, typ, subject string) []byte {
	return []byte(fmt.Sprintf(`{"specversion":"1.0","id":%q,"source":"/simcloud/eu","type":%q,"subject":%q,"time":"2026-11-27T01:00:00Z",
		"datacontenttype":"application/json","data":{"power":"off"}}`, id, typ, subject))
}

func TestEvents_WebhookAuthenticatesDecodesAndLogsOnce(t *testing.T) {
	s := apptest.NewSite(t)
	root := s.Token(t, s.Admin)
	zone, path, secret := apptest.Webhook(t, s, "events-eu")

	// The secret is shown once: the source's list never holds it.
	list := s.Call(t, "GET", "/api/v1/landing-zones/"+zone+"/event-sources", root, nil)
	apptest.WantStatus(t, list, http.StatusOK)
	if strings.Contains(string(list.Body), secret) || !strings.Contains(string(list.Body), `"kind":"webhook"`) {
		t.Fatalf("the sources list: %s", list.Body)
	}
	apptest.WantStatus(t, s.Call(t, "GET", "/api/v1/landing-zones/"+zone+"/event-sources", s.Token(t, s.AdminA), nil), http.StatusNotFound)
	var sealed []byte
	apptest.Must(t, s.Pool.QueryRow(t.Context(), `SELECT secret FROM event_sources WHERE landing_zone_id = $1`, zone).Scan(&sealed))
	if bytes.Contains(sealed, []byte(secret)) {
		t.Fatal("the source's secret is stored in plain text")
	}

	// Alertmanager with its bearer token: one event per alert; sent again, stored once.
	body := apptest.Alertmanager(`"alertname":"Down","severity":"critical"`, `"alertname":"Down","severity":"warning"`)
	r := s.Send(t, path, body, "Content-Type", "application/json", "Authorization", "Bearer "+secret)
	apptest.WantStatus(t, r, http.StatusAccepted)
	if got := r.JSON(t); got["accepted"] != 2.0 || got["duplicates"] != 0.0 {
		t.Fatalf("the notification: %s", r.Body)
	}
	r = s.Send(t, path, body, "Content-Type", "application/json", "Authorization", "Bearer "+secret)
	apptest.WantStatus(t, r, http.StatusAccepted)
	if got := r.JSON(t); got["accepted"] != 0.0 || got["duplicates"] != 2.0 {
		t.Fatalf("the notification again: %s", r.Body)
	}

	// A wrong secret is refused and logged without the body.
	wrong := apptest.Alertmanager(`"alertname":"Wrong","severity":"critical"`)
	r = s.Send(t, path, wrong, "Content-Type", "application/json", "Authorization", "Bearer not-"+secret)
	apptest.WantStatus(t, r, http.StatusUnauthorized)
	apptest.WantStatus(t, s.Send(t, path, wrong, "Content-Type", "application/json"), http.StatusUnauthorized)
	if logs := s.Logs.String(); !strings.Contains(logs, "wrong bearer token") || strings.Contains(logs, `"alertname":"Wrong"`) || strings.Contains(logs, "Wrong") {
		t.Fatalf("the refusal is not logged as it should be:\n%s", logs)
	}

	// A signed CloudEvent, structured and binary; a replay of the same request is the same
	// event; a stale timestamp and a wrong signature are refused.
	now := time.Now()
	ce := cloudEvent("ce-1", "vm.stopped", "vm-17")
	apptest.WantStatus(t, s.Send(t, path, ce, apptest.Signed(secret, now, ce, "application/cloudevents+json")...), http.StatusAccepted)
	r = s.Send(t, path, ce, apptest.Signed(secret, now, ce, "application/cloudevents+json")...)
	apptest.WantStatus(t, r, http.StatusAccepted)
	if r.JSON(t)["duplicates"] != 1.0 {
		t.Fatalf("the replay: %s", r.Body)
	}
	// In binary mode the event's id, type and target are headers a signature does not cover:
	// it takes the bearer token.
	binary := []byte(`{"power":"off"}`)
	ceHeaders := []string{"ce-specversion", "1.0", "ce-id", "ce-2", "ce-source", "/simcloud/eu", "ce-type", "vm.started", "ce-subject", "vm-18"}
	apptest.WantStatus(t, s.Send(t, path, binary, append(apptest.Signed(secret, now, binary, "application/json"), ceHeaders...)...), http.StatusUnauthorized)
	apptest.WantStatus(t, s.Send(t, path, binary, append([]string{"Content-Type", "application/json", "Authorization", "Bearer " + secret}, ceHeaders...)...),
		http.StatusAccepted)
	stale := cloudEvent("ce-3", "vm.stopped", "vm-19")
	apptest.WantStatus(t, s.Send(t, path, stale, apptest.Signed(secret, now.Add(-6*time.Minute), stale, "application/cloudevents+json")...), http.StatusUnauthorized)
	forged := apptest.Signed(secret, now, stale, "application/cloudevents+json")
	forged[len(forged)-1] = event.Sign([]byte("guess"), now, stale)
	apptest.WantStatus(t, s.Send(t, path, stale, forged...), http.StatusUnauthorized)

	// Plain JSON; what cannot be read names its field and rule.
	apptest.WantStatus(t, s.Send(t, path, []byte(`{"type":"backup.failed","subject":"db-1","data":{"password":"p4ss"}}`),
		"Content-Type", "application/json", "Authorization", "Bearer "+secret), http.StatusAccepted)
	r = s.Send(t, path, []byte(`{"subject":"db-1"}`), "Content-Type", "application/json", "Authorization", "Bearer "+secret)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), `"field":"type"`) {
		t.Fatalf("a plain event without a type: %s", r.Body)
	}
	apptest.WantStatus(t, s.Send(t, path, []byte(`not json`), "Content-Type", "application/json", "Authorization", "Bearer "+secret), http.StatusUnprocessableEntity)
	apptest.WantStatus(t, s.Send(t, "/api/v1/events/"+zone, body, "Authorization", "Bearer "+secret), http.StatusNotFound)

	// Every event accepted is in the log, routed (nothing here names a target) and with its
	// secrets redacted; tenants see none of what reached no tenant.
	events := s.LoggedEvents(t, root, zone, 5)
	if len(events) != 5 {
		t.Fatalf("the log holds %d events, want 5", len(events))
	}
	for _, e := range events {
		if e["outcome"] != event.Unrouted {
			t.Fatalf("an event with no target: %v", e)
		}
	}
	var text string
	apptest.Must(t, s.Pool.QueryRow(t.Context(), `SELECT string_agg(payload::text, ' ') FROM event_log`).Scan(&text))
	if strings.Contains(text, "hunter2") || strings.Contains(text, "p4ss") || !strings.Contains(text, "it broke") {
		t.Fatalf("the payloads kept: %s", text)
	}
	r = s.Call(t, "GET", "/api/v1/events", s.Token(t, s.AdminA), nil)
	apptest.WantStatus(t, r, http.StatusOK)
	if n := len(r.JSON(t)["events"].([]any)); n != 0 {
		t.Fatalf("a tenant admin sees %d events that reached no tenant", n)
	}

	// A source turned off refuses; a new secret replaces the old one at once.
	id := strings.TrimPrefix(path, "/api/v1/events/")
	apptest.WantStatus(t, s.Call(t, "PATCH", "/api/v1/event-sources/"+id, root, map[string]any{"active": false}), http.StatusOK)
	apptest.WantStatus(t, s.Send(t, path, body, "Authorization", "Bearer "+secret), http.StatusForbidden)
	apptest.WantStatus(t, s.Call(t, "PATCH", "/api/v1/event-sources/"+id, root, map[string]any{"active": true}), http.StatusOK)
	r = s.Call(t, "POST", "/api/v1/event-sources/"+id+"/secret", root, nil)
	apptest.WantStatus(t, r, http.StatusOK)
	fresh := r.JSON(t)["secret"].(string)
	apptest.WantStatus(t, s.Send(t, path, body, "Authorization", "Bearer "+secret), http.StatusUnauthorized)
	apptest.WantStatus(t, s.Send(t, path, body, "Authorization", "Bearer "+fresh), http.StatusAccepted)
}

func TestEvents_AFloodIsStoredOnceAndRouted(t *testing.T) {
	s := apptest.NewSite(t)
	zone, path, secret := apptest.Webhook(t, s, "flood")
	const clients, each = 20, 50
	var wg sync.WaitGroup
	errs := make(chan string, clients)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				// Every client also sends one of its neighbour's events: the same id twice.
				n := c*each + i
				if i == each-1 {
					n = ((c+1)%clients)*each + 0
				}
				body := cloudEvent(fmt.Sprintf("flood-%d", n), "vm.stopped", fmt.Sprintf("vm-%d", n))
				r := s.Send(t, path, body, "Content-Type", "application/cloudevents+json", "Authorization", "Bearer "+secret)
				if r.Status != http.StatusAccepted {
					errs <- fmt.Sprintf("%d %s", r.Status, r.Body)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	// Each client's last event repeats another's first: 20 × 49 distinct events.
	want := clients * (each - 1)
	events := s.LoggedEvents(t, s.Token(t, s.Admin), zone, want)
	if len(events) != want {
		t.Fatalf("the log holds %d events, want %d", len(events), want)
	}
	var dup int
	apptest.Must(t, s.Pool.QueryRow(context.Background(), `SELECT count(*) - count(DISTINCT event_id) FROM event_log`).Scan(&dup))
	if dup != 0 {
		t.Fatalf("%d events are stored twice", dup)
	}
}

// alertStack is one network with a lifecycle active ⇄ degraded, and rules: a critical alert
// degrades, a stopped machine degrades, a resolved alert recovers.
func alertStack(t testing.TB, s *apptest.Site) stack.Definition {
	ids := apptest.BuiltinIDs(t, s)
	return stack.Definition{
		Parameters: json.RawMessage(`{"type":"object","properties":{}}`),
		Slots: []stack.Slot{{Name: "net", Component: uuid.MustParse(ids["simcloud-network"]), Version: 1, Inputs: map[string]stack.Wiring{
			"name": {Kind: stack.Literal, Value: "watched-net"}, "cidr": {Kind: stack.Literal, Value: "10.30.0.0/16"}}}},
		Machine: stack.Machine{
			States: []stack.State{{Name: "active", Initial: true}, {Name: "degraded"}},
			Transitions: []stack.Transition{
				{From: "active", To: "degraded", Trigger: "degrade"},
				{From: "degraded", To: "active", Trigger: "recover"},
			},
		},
		Routes: []stack.Route{
			{Source: "webhook", Type: "alert.firing", Filter: `has(event.data.labels.severity) && event.data.labels.severity == "critical"`, Trigger: "degrade"},
			{Type: "vm.stopped", Trigger: "degrade"},
			{Type: "alert.resolved", Trigger: "recover"},
		},
	}
}

func TestEvents_RulesMoveAStackInstance(t *testing.T) {
	s := apptest.NewSite(t)
	root, user := s.Token(t, s.Admin), s.Token(t, s.UserA)
	zone, path, secret := apptest.Webhook(t, s, "watched")

	// The stack is made and published through the API: publishing keeps its rules.
	r := s.Call(t, "POST", "/api/v1/stacks", root, map[string]any{"provider": "simcloud", "name": "watched", "draft": alertStack(t, s)})
	apptest.WantStatus(t, r, http.StatusCreated)
	stackID := r.JSON(t)["id"].(string)
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/stacks/"+stackID+"/publish", root, map[string]any{"changelog": "first"}), http.StatusCreated)
	r = s.Call(t, "GET", "/api/v1/stacks/"+stackID+"/versions/1", root, nil)
	apptest.WantStatus(t, r, http.StatusOK)
	if !strings.Contains(string(r.Body), `"trigger":"recover"`) || !strings.Contains(string(r.Body), `"type":"vm.stopped"`) {
		t.Fatalf("the published version lost its routes: %s", r.Body)
	}

	// An environment of the source's landing zone: these tests are about events, not zones.
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "ops")
	apptest.Must(t, err)
	_, err = s.Pool.Exec(t.Context(), `UPDATE environments SET landing_zone_id = $1 WHERE id = $2`, zone, env.ID)
	apptest.Must(t, err)
	r = s.Call(t, "POST", "/api/v1/stack-instances", user, map[string]any{"stack_id": stackID, "environment_id": env.ID, "name": "watched"})
	apptest.WantStatus(t, r, http.StatusAccepted)
	id := r.JSON(t)["id"].(string)
	if inst := s.WaitInstance(t, user, id, apptest.Status("active", "failed")); inst["state"] != "active" {
		t.Fatalf("deploy: %v", inst)
	}
	bearer := []string{"Content-Type", "application/json", "Authorization", "Bearer " + secret}

	// A warning is no rule's; a critical alert degrades the instance.
	apptest.WantStatus(t, s.Send(t, path, apptest.Alertmanager(`"alertname":"Slow","severity":"warning","stack_instance":"`+id+`"`), bearer...), http.StatusAccepted)
	apptest.WantStatus(t, s.Send(t, path, apptest.Alertmanager(`"alertname":"Down","severity":"critical","stack_instance":"`+id+`"`), bearer...), http.StatusAccepted)
	s.WaitInstance(t, user, id, func(m map[string]any) bool { return m["state"] == "degraded" && m["status"] == "active" })
	events := s.LoggedEvents(t, user, zone, 2)
	byType := map[string]map[string]any{}
	for _, e := range events {
		byType[e["subject"].(string)] = e
	}
	if w := byType["Slow"]; w["outcome"] != event.Unmatched || w["stack_instance_id"] != id {
		t.Fatalf("the warning: %v", w)
	}
	if c := byType["Down"]; c["outcome"] != event.Signalled || c["rule"] != 1.0 || c["trigger"] != "degrade" || c["run_id"] == nil {
		t.Fatalf("the critical alert: %v", c)
	}
	if h := s.History(t, user, id)[0]; h["source"] != "event" || h["trigger"] != "degrade" || h["to"] != "degraded" {
		t.Fatalf("the history's newest change: %v", h)
	}

	// Degraded takes no degrade: the event is logged as refused, not as a failure.
	ce := cloudEvent("stop-1", "vm.stopped", "")
	ce = bytes.Replace(ce, []byte(`"subject":""`), []byte(`"stackinstance":"`+id+`"`), 1)
	apptest.WantStatus(t, s.Send(t, path, ce, apptest.Signed(secret, time.Now(), ce, "application/cloudevents+json")...), http.StatusAccepted)
	events = s.LoggedEvents(t, user, zone, 3)
	if e := events[0]; e["outcome"] != event.Refused || !strings.Contains(e["detail"].(string), "degrade is not a trigger of state degraded") {
		t.Fatalf("the stop while degraded: %v", e)
	}

	// A resolved alert naming the network by its output recovers it; then a stop, named by the
	// deployment's ID, degrades it again.
	var netID, deployment string
	apptest.Must(t, s.Pool.QueryRow(t.Context(), `SELECT outputs->>'network_id', id::text FROM deployed_components WHERE stack_instance_id = $1`, id).Scan(&netID, &deployment))
	resolved := bytes.Replace(apptest.Alertmanager(`"alertname":"Down","severity":"critical","resource":"`+netID+`"`), []byte(`"status":"firing","labels"`), []byte(`"status":"resolved","labels"`), 1)
	apptest.WantStatus(t, s.Send(t, path, resolved, bearer...), http.StatusAccepted)
	s.WaitInstance(t, user, id, func(m map[string]any) bool { return m["state"] == "active" && m["status"] == "active" })
	apptest.WantStatus(t, s.Send(t, path, []byte(`{"id":"stop-2","type":"vm.stopped","deployment":"`+deployment+`"}`), bearer...), http.StatusAccepted)
	s.WaitInstance(t, user, id, func(m map[string]any) bool { return m["state"] == "degraded" && m["status"] == "active" })

	// The instance's log, for a tenant's reader: what came in, and what Nimbus told of it.
	r = s.Call(t, "GET", "/api/v1/events?stack_instance_id="+id, s.Token(t, s.ReaderA), nil)
	apptest.WantStatus(t, r, http.StatusOK)
	kinds := map[string]int{}
	for _, e := range r.JSON(t)["events"].([]any) {
		m := e.(map[string]any)
		kinds[m["source_kind"].(string)+" "+m["type"].(string)]++
	}
	if kinds["webhook alert.firing"] != 2 || kinds["webhook vm.stopped"] != 2 || kinds["webhook alert.resolved"] != 1 ||
		kinds["nimbus stack.state_changed"] != 4 || kinds["nimbus deployment.succeeded"] != 1 {
		t.Fatalf("the instance's log holds %v", kinds)
	}
	// Another tenant sees none of it.
	r = s.Call(t, "GET", "/api/v1/events?stack_instance_id="+id, s.Token(t, s.AdminB), nil)
	if n := len(r.JSON(t)["events"].([]any)); n != 0 {
		t.Fatalf("another tenant sees %d of the instance's events", n)
	}

	// A source of another zone cannot reach the instance.
	_, otherPath, otherSecret := apptest.Webhook(t, s, "elsewhere")
	apptest.WantStatus(t, s.Send(t, otherPath, []byte(`{"id":"x","type":"alert.resolved","stack_instance":"`+id+`"}`),
		"Content-Type", "application/json", "Authorization", "Bearer "+otherSecret), http.StatusAccepted)
	var outcome string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		apptest.Must(t, s.Pool.QueryRow(t.Context(), `SELECT outcome FROM event_log WHERE event_id = 'x'`).Scan(&outcome))
		if outcome != event.Pending {
			break
		}
	}
	if outcome != event.Unrouted {
		t.Fatalf("an event of another zone naming the instance: %s", outcome)
	}
}

func TestEventPages_TheLogShowsWhatCameAndWhatItDid(t *testing.T) {
	s := apptest.NewSite(t)
	_, path, secret := apptest.Webhook(t, s, "paged")
	apptest.WantStatus(t, s.Send(t, path, []byte(`{"id":"p-1","type":"backup.failed","subject":"db-1","data":{"password":"p4ss"}}`),
		"Content-Type", "application/json", "Authorization", "Bearer "+secret), http.StatusAccepted)
	root := s.Token(t, s.Admin)
	var page string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		r := s.Call(t, "GET", "/events?type=backup.failed", root, nil)
		apptest.WantStatus(t, r, http.StatusOK)
		if page = string(r.Body); strings.Contains(page, `data-outcome="unrouted"`) {
			break
		}
	}
	for _, want := range []string{`data-type="backup.failed"`, `data-outcome="unrouted"`, "db-1", "[redacted]", `hx-trigger="every 3s"`} {
		if !strings.Contains(page, want) {
			t.Fatalf("the log page lacks %s:\n%s", want, page)
		}
	}
	if strings.Contains(page, "p4ss") {
		t.Fatal("the log page shows a secret")
	}
	r := s.Call(t, "GET", "/events?type=backup.failed", s.Token(t, s.ReaderA), nil)
	apptest.WantStatus(t, r, http.StatusOK)
	if strings.Contains(string(r.Body), "db-1") {
		t.Fatal("a tenant's reader sees an event that reached no tenant")
	}
	apptest.WantStatus(t, s.Call(t, "GET", "/events?stack_instance_id=nope", root, nil), http.StatusUnprocessableEntity)
}
