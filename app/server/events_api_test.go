package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"nimbus/app/environment"
	"nimbus/app/event"
	"nimbus/app/stack"
)

// webhook makes a webhook source in a new landing zone and returns the zone, the source's
// receiving path and its secret.
func webhook(t testing.TB, s *site, name string) (zone, path, secret string) {
	t.Helper()
	root := s.token(t, s.admin)
	r := s.call(t, "POST", "/api/v1/landing-zones", root, map[string]any{"name": name, "provider": "simcloud"})
	wantStatus(t, r, http.StatusCreated)
	zone = r.json(t)["id"].(string)
	r = s.call(t, "POST", "/api/v1/landing-zones/"+zone+"/event-sources", root, map[string]any{"name": "alerts", "kind": "webhook"})
	wantStatus(t, r, http.StatusCreated)
	src := r.json(t)
	return zone, src["url"].(string), src["secret"].(string)
}

// send posts body to a receiving path with the headers given (name, value, name, value...).
func (s *site) send(t testing.TB, path string, body []byte, headers ...string) reply {
	t.Helper()
	req, _ := http.NewRequest("POST", s.url+path, bytes.NewReader(body))
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: data}
}

// alertmanager is a notification of Alertmanager's webhook (version 4) with one alert per set
// of labels, firing.
func alertmanager(labels ...string) []byte {
	var alerts []string
	for i, l := range labels {
		alerts = append(alerts, fmt.Sprintf(`{"status":"firing","labels":{%s},"annotations":{"summary":"it broke","runbook_token":"hunter2"},
			"startsAt":"2026-11-27T01:00:00Z","endsAt":"0001-01-01T00:00:00Z","generatorURL":"http://prometheus:9090/graph","fingerprint":"f%d%x"}`, l, i, len(l)))
	}
	return []byte(`{"version":"4","groupKey":"{}:{alertname=\"Down\"}","truncatedAlerts":0,"status":"firing","receiver":"nimbus",
		"groupLabels":{"alertname":"Down"},"commonLabels":{"alertname":"Down"},"commonAnnotations":{},"externalURL":"http://alertmanager:9093",
		"alerts":[` + strings.Join(alerts, ",") + `]}`)
}

// cloudEvent is a structured-mode CloudEvent.
func cloudEvent(id, typ, subject string) []byte {
	return []byte(fmt.Sprintf(`{"specversion":"1.0","id":%q,"source":"/simcloud/eu","type":%q,"subject":%q,"time":"2026-11-27T01:00:00Z",
		"datacontenttype":"application/json","data":{"power":"off"}}`, id, typ, subject))
}

// signed returns the headers of a request signed with secret at at.
func signed(secret string, at time.Time, body []byte, contentType string) []string {
	return []string{"Content-Type", contentType, event.TimestampHeader, fmt.Sprint(at.Unix()), event.SignatureHeader, event.Sign([]byte(secret), at, body)}
}

// loggedEvents waits until the log holds n events that came into the zone (not Nimbus's own)
// and none is waiting to be routed, and returns them.
func (s *site) loggedEvents(t *testing.T, token, zone string, n int) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	var got []map[string]any
	for time.Now().Before(deadline) {
		got = got[:0]
		pending := 0
		for next := ""; ; {
			r := s.call(t, "GET", "/api/v1/events?limit=200&landing_zone_id="+zone+"&after="+next, token, nil)
			wantStatus(t, r, http.StatusOK)
			page := r.json(t)
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

func TestEvents_WebhookAuthenticatesDecodesAndLogsOnce(t *testing.T) {
	s := newSite(t)
	root := s.token(t, s.admin)
	zone, path, secret := webhook(t, s, "events-eu")

	// The secret is shown once: the source's list never holds it.
	list := s.call(t, "GET", "/api/v1/landing-zones/"+zone+"/event-sources", root, nil)
	wantStatus(t, list, http.StatusOK)
	if strings.Contains(string(list.body), secret) || !strings.Contains(string(list.body), `"kind":"webhook"`) {
		t.Fatalf("the sources list: %s", list.body)
	}
	wantStatus(t, s.call(t, "GET", "/api/v1/landing-zones/"+zone+"/event-sources", s.token(t, s.adminA), nil), http.StatusNotFound)
	var sealed []byte
	must(t, s.pool.QueryRow(t.Context(), `SELECT secret FROM event_sources WHERE landing_zone_id = $1`, zone).Scan(&sealed))
	if bytes.Contains(sealed, []byte(secret)) {
		t.Fatal("the source's secret is stored in plain text")
	}

	// Alertmanager with its bearer token: one event per alert; sent again, stored once.
	body := alertmanager(`"alertname":"Down","severity":"critical"`, `"alertname":"Down","severity":"warning"`)
	r := s.send(t, path, body, "Content-Type", "application/json", "Authorization", "Bearer "+secret)
	wantStatus(t, r, http.StatusAccepted)
	if got := r.json(t); got["accepted"] != 2.0 || got["duplicates"] != 0.0 {
		t.Fatalf("the notification: %s", r.body)
	}
	r = s.send(t, path, body, "Content-Type", "application/json", "Authorization", "Bearer "+secret)
	wantStatus(t, r, http.StatusAccepted)
	if got := r.json(t); got["accepted"] != 0.0 || got["duplicates"] != 2.0 {
		t.Fatalf("the notification again: %s", r.body)
	}

	// A wrong secret is refused and logged without the body.
	wrong := alertmanager(`"alertname":"Wrong","severity":"critical"`)
	r = s.send(t, path, wrong, "Content-Type", "application/json", "Authorization", "Bearer not-"+secret)
	wantStatus(t, r, http.StatusUnauthorized)
	wantStatus(t, s.send(t, path, wrong, "Content-Type", "application/json"), http.StatusUnauthorized)
	if logs := s.logs.String(); !strings.Contains(logs, "wrong bearer token") || strings.Contains(logs, `"alertname":"Wrong"`) || strings.Contains(logs, "Wrong") {
		t.Fatalf("the refusal is not logged as it should be:\n%s", logs)
	}

	// A signed CloudEvent, structured and binary; a replay of the same request is the same
	// event; a stale timestamp and a wrong signature are refused.
	now := time.Now()
	ce := cloudEvent("ce-1", "vm.stopped", "vm-17")
	wantStatus(t, s.send(t, path, ce, signed(secret, now, ce, "application/cloudevents+json")...), http.StatusAccepted)
	r = s.send(t, path, ce, signed(secret, now, ce, "application/cloudevents+json")...)
	wantStatus(t, r, http.StatusAccepted)
	if r.json(t)["duplicates"] != 1.0 {
		t.Fatalf("the replay: %s", r.body)
	}
	// In binary mode the event's id, type and target are headers a signature does not cover:
	// it takes the bearer token.
	binary := []byte(`{"power":"off"}`)
	ceHeaders := []string{"ce-specversion", "1.0", "ce-id", "ce-2", "ce-source", "/simcloud/eu", "ce-type", "vm.started", "ce-subject", "vm-18"}
	wantStatus(t, s.send(t, path, binary, append(signed(secret, now, binary, "application/json"), ceHeaders...)...), http.StatusUnauthorized)
	wantStatus(t, s.send(t, path, binary, append([]string{"Content-Type", "application/json", "Authorization", "Bearer " + secret}, ceHeaders...)...),
		http.StatusAccepted)
	stale := cloudEvent("ce-3", "vm.stopped", "vm-19")
	wantStatus(t, s.send(t, path, stale, signed(secret, now.Add(-6*time.Minute), stale, "application/cloudevents+json")...), http.StatusUnauthorized)
	forged := signed(secret, now, stale, "application/cloudevents+json")
	forged[len(forged)-1] = event.Sign([]byte("guess"), now, stale)
	wantStatus(t, s.send(t, path, stale, forged...), http.StatusUnauthorized)

	// Plain JSON; what cannot be read names its field and rule.
	wantStatus(t, s.send(t, path, []byte(`{"type":"backup.failed","subject":"db-1","data":{"password":"p4ss"}}`),
		"Content-Type", "application/json", "Authorization", "Bearer "+secret), http.StatusAccepted)
	r = s.send(t, path, []byte(`{"subject":"db-1"}`), "Content-Type", "application/json", "Authorization", "Bearer "+secret)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.body), `"field":"type"`) {
		t.Fatalf("a plain event without a type: %s", r.body)
	}
	wantStatus(t, s.send(t, path, []byte(`not json`), "Content-Type", "application/json", "Authorization", "Bearer "+secret), http.StatusUnprocessableEntity)
	wantStatus(t, s.send(t, "/api/v1/events/"+zone, body, "Authorization", "Bearer "+secret), http.StatusNotFound)

	// Every event accepted is in the log, routed (nothing here names a target) and with its
	// secrets redacted; tenants see none of what reached no tenant.
	events := s.loggedEvents(t, root, zone, 5)
	if len(events) != 5 {
		t.Fatalf("the log holds %d events, want 5", len(events))
	}
	for _, e := range events {
		if e["outcome"] != event.Unrouted {
			t.Fatalf("an event with no target: %v", e)
		}
	}
	var text string
	must(t, s.pool.QueryRow(t.Context(), `SELECT string_agg(payload::text, ' ') FROM event_log`).Scan(&text))
	if strings.Contains(text, "hunter2") || strings.Contains(text, "p4ss") || !strings.Contains(text, "it broke") {
		t.Fatalf("the payloads kept: %s", text)
	}
	r = s.call(t, "GET", "/api/v1/events", s.token(t, s.adminA), nil)
	wantStatus(t, r, http.StatusOK)
	if n := len(r.json(t)["events"].([]any)); n != 0 {
		t.Fatalf("a tenant admin sees %d events that reached no tenant", n)
	}

	// A source turned off refuses; a new secret replaces the old one at once.
	id := strings.TrimPrefix(path, "/api/v1/events/")
	wantStatus(t, s.call(t, "PATCH", "/api/v1/event-sources/"+id, root, map[string]any{"active": false}), http.StatusOK)
	wantStatus(t, s.send(t, path, body, "Authorization", "Bearer "+secret), http.StatusForbidden)
	wantStatus(t, s.call(t, "PATCH", "/api/v1/event-sources/"+id, root, map[string]any{"active": true}), http.StatusOK)
	r = s.call(t, "POST", "/api/v1/event-sources/"+id+"/secret", root, nil)
	wantStatus(t, r, http.StatusOK)
	fresh := r.json(t)["secret"].(string)
	wantStatus(t, s.send(t, path, body, "Authorization", "Bearer "+secret), http.StatusUnauthorized)
	wantStatus(t, s.send(t, path, body, "Authorization", "Bearer "+fresh), http.StatusAccepted)
}

func TestEvents_AFloodIsStoredOnceAndRouted(t *testing.T) {
	s := newSite(t)
	zone, path, secret := webhook(t, s, "flood")
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
				r := s.send(t, path, body, "Content-Type", "application/cloudevents+json", "Authorization", "Bearer "+secret)
				if r.status != http.StatusAccepted {
					errs <- fmt.Sprintf("%d %s", r.status, r.body)
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
	events := s.loggedEvents(t, s.token(t, s.admin), zone, want)
	if len(events) != want {
		t.Fatalf("the log holds %d events, want %d", len(events), want)
	}
	var dup int
	must(t, s.pool.QueryRow(context.Background(), `SELECT count(*) - count(DISTINCT event_id) FROM event_log`).Scan(&dup))
	if dup != 0 {
		t.Fatalf("%d events are stored twice", dup)
	}
}

// alertStack is one network with a lifecycle active ⇄ degraded, and rules: a critical alert
// degrades, a stopped machine degrades, a resolved alert recovers.
func alertStack(t testing.TB, s *site) stack.Definition {
	ids := builtinIDs(t, s)
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
	s := newSite(t)
	root, user := s.token(t, s.admin), s.token(t, s.userA)
	zone, path, secret := webhook(t, s, "watched")

	// The stack is made and published through the API: publishing keeps its rules.
	r := s.call(t, "POST", "/api/v1/stacks", root, map[string]any{"provider": "simcloud", "name": "watched", "draft": alertStack(t, s)})
	wantStatus(t, r, http.StatusCreated)
	stackID := r.json(t)["id"].(string)
	wantStatus(t, s.call(t, "POST", "/api/v1/stacks/"+stackID+"/publish", root, map[string]any{"changelog": "first"}), http.StatusCreated)
	r = s.call(t, "GET", "/api/v1/stacks/"+stackID+"/versions/1", root, nil)
	wantStatus(t, r, http.StatusOK)
	if !strings.Contains(string(r.body), `"trigger":"recover"`) || !strings.Contains(string(r.body), `"type":"vm.stopped"`) {
		t.Fatalf("the published version lost its routes: %s", r.body)
	}

	// An environment of the source's landing zone: these tests are about events, not zones.
	env, err := environment.NewService(s.pool).Create(t.Context(), s.adminA, s.a.ID, "ops")
	must(t, err)
	_, err = s.pool.Exec(t.Context(), `UPDATE environments SET landing_zone_id = $1 WHERE id = $2`, zone, env.ID)
	must(t, err)
	r = s.call(t, "POST", "/api/v1/stack-instances", user, map[string]any{"stack_id": stackID, "environment_id": env.ID, "name": "watched"})
	wantStatus(t, r, http.StatusAccepted)
	id := r.json(t)["id"].(string)
	if inst := s.waitInstance(t, user, id, status("active", "failed")); inst["state"] != "active" {
		t.Fatalf("deploy: %v", inst)
	}
	bearer := []string{"Content-Type", "application/json", "Authorization", "Bearer " + secret}

	// A warning is no rule's; a critical alert degrades the instance.
	wantStatus(t, s.send(t, path, alertmanager(`"alertname":"Slow","severity":"warning","stack_instance":"`+id+`"`), bearer...), http.StatusAccepted)
	wantStatus(t, s.send(t, path, alertmanager(`"alertname":"Down","severity":"critical","stack_instance":"`+id+`"`), bearer...), http.StatusAccepted)
	s.waitInstance(t, user, id, func(m map[string]any) bool { return m["state"] == "degraded" && m["status"] == "active" })
	events := s.loggedEvents(t, user, zone, 2)
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
	if h := s.history(t, user, id)[0]; h["source"] != "event" || h["trigger"] != "degrade" || h["to"] != "degraded" {
		t.Fatalf("the history's newest change: %v", h)
	}

	// Degraded takes no degrade: the event is logged as refused, not as a failure.
	ce := cloudEvent("stop-1", "vm.stopped", "")
	ce = bytes.Replace(ce, []byte(`"subject":""`), []byte(`"stackinstance":"`+id+`"`), 1)
	wantStatus(t, s.send(t, path, ce, signed(secret, time.Now(), ce, "application/cloudevents+json")...), http.StatusAccepted)
	events = s.loggedEvents(t, user, zone, 3)
	if e := events[0]; e["outcome"] != event.Refused || !strings.Contains(e["detail"].(string), "degrade is not a trigger of state degraded") {
		t.Fatalf("the stop while degraded: %v", e)
	}

	// A resolved alert naming the network by its output recovers it; then a stop, named by the
	// deployment's ID, degrades it again.
	var netID, deployment string
	must(t, s.pool.QueryRow(t.Context(), `SELECT outputs->>'network_id', id::text FROM deployed_components WHERE stack_instance_id = $1`, id).Scan(&netID, &deployment))
	resolved := bytes.Replace(alertmanager(`"alertname":"Down","severity":"critical","resource":"`+netID+`"`), []byte(`"status":"firing","labels"`), []byte(`"status":"resolved","labels"`), 1)
	wantStatus(t, s.send(t, path, resolved, bearer...), http.StatusAccepted)
	s.waitInstance(t, user, id, func(m map[string]any) bool { return m["state"] == "active" && m["status"] == "active" })
	wantStatus(t, s.send(t, path, []byte(`{"id":"stop-2","type":"vm.stopped","deployment":"`+deployment+`"}`), bearer...), http.StatusAccepted)
	s.waitInstance(t, user, id, func(m map[string]any) bool { return m["state"] == "degraded" && m["status"] == "active" })

	// The instance's log, for a tenant's reader: what came in, and what Nimbus told of it.
	r = s.call(t, "GET", "/api/v1/events?stack_instance_id="+id, s.token(t, s.readerA), nil)
	wantStatus(t, r, http.StatusOK)
	kinds := map[string]int{}
	for _, e := range r.json(t)["events"].([]any) {
		m := e.(map[string]any)
		kinds[m["source_kind"].(string)+" "+m["type"].(string)]++
	}
	if kinds["webhook alert.firing"] != 2 || kinds["webhook vm.stopped"] != 2 || kinds["webhook alert.resolved"] != 1 ||
		kinds["nimbus stack.state_changed"] != 4 || kinds["nimbus deployment.succeeded"] != 1 {
		t.Fatalf("the instance's log holds %v", kinds)
	}
	// Another tenant sees none of it.
	r = s.call(t, "GET", "/api/v1/events?stack_instance_id="+id, s.token(t, s.adminB), nil)
	if n := len(r.json(t)["events"].([]any)); n != 0 {
		t.Fatalf("another tenant sees %d of the instance's events", n)
	}

	// A source of another zone cannot reach the instance.
	_, otherPath, otherSecret := webhook(t, s, "elsewhere")
	wantStatus(t, s.send(t, otherPath, []byte(`{"id":"x","type":"alert.resolved","stack_instance":"`+id+`"}`),
		"Content-Type", "application/json", "Authorization", "Bearer "+otherSecret), http.StatusAccepted)
	var outcome string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		must(t, s.pool.QueryRow(t.Context(), `SELECT outcome FROM event_log WHERE event_id = 'x'`).Scan(&outcome))
		if outcome != event.Pending {
			break
		}
	}
	if outcome != event.Unrouted {
		t.Fatalf("an event of another zone naming the instance: %s", outcome)
	}
}

func TestEventPages_TheLogShowsWhatCameAndWhatItDid(t *testing.T) {
	s := newSite(t)
	_, path, secret := webhook(t, s, "paged")
	wantStatus(t, s.send(t, path, []byte(`{"id":"p-1","type":"backup.failed","subject":"db-1","data":{"password":"p4ss"}}`),
		"Content-Type", "application/json", "Authorization", "Bearer "+secret), http.StatusAccepted)
	root := s.token(t, s.admin)
	var page string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		r := s.call(t, "GET", "/events?type=backup.failed", root, nil)
		wantStatus(t, r, http.StatusOK)
		if page = string(r.body); strings.Contains(page, `data-outcome="unrouted"`) {
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
	r := s.call(t, "GET", "/events?type=backup.failed", s.token(t, s.readerA), nil)
	wantStatus(t, r, http.StatusOK)
	if strings.Contains(string(r.body), "db-1") {
		t.Fatal("a tenant's reader sees an event that reached no tenant")
	}
	wantStatus(t, s.call(t, "GET", "/events?stack_instance_id=nope", root, nil), http.StatusUnprocessableEntity)
}
