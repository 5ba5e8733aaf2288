package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/domain/component"
	"nimbus/app/domain/stack"
	"nimbus/app/kernel/access"
	"nimbus/app/orchestration/environment"
)

// watchedStack is one network with a lifecycle active ⇄ degraded and, when routed, a rule by
// which a critical alert from a webhook degrades it.
func watchedStack(t *testing.T, a *app, routed bool) stack.Definition {
	t.Helper()
	var network uuid.UUID
	if err := a.pool.QueryRow(context.Background(), `SELECT id FROM components WHERE name = 'simcloud-network'`).Scan(&network); err != nil {
		t.Fatal(err)
	}
	def := stack.Definition{
		Parameters: json.RawMessage(`{"type":"object","properties":{}}`),
		Slots: []stack.Slot{{Name: "net", Component: network, Version: 1, Inputs: map[string]stack.Wiring{
			"name": {Kind: stack.Literal, Value: "watched-net"}, "cidr": {Kind: stack.Literal, Value: "10.30.0.0/16"}}}},
		Machine: stack.Machine{
			States: []stack.State{{Name: "active", Initial: true}, {Name: "degraded"}},
			Transitions: []stack.Transition{
				{From: "active", To: "degraded", Trigger: "degrade"},
				{From: "degraded", To: "active", Trigger: "recover"},
			},
		},
	}
	if routed {
		def.Routes = []stack.Route{{Source: "webhook", Type: "alert.firing", Filter: `event.data.labels.severity == "critical"`, Trigger: "degrade"}}
	}
	return def
}

// createStack creates a provider stack on the simulated cloud with def as its draft through
// the API, and returns its ID.
func createStack(t *testing.T, a *app, token, name string, def stack.Definition) string {
	t.Helper()
	var created struct{ ID string }
	apiPost(t, a.url+"/api/v1/stacks", token, map[string]any{"provider": "simcloud", "name": name, "draft": def}, &created)
	return created.ID
}

// firing is a notification of Alertmanager's webhook (version 4) with one alert, firing, whose
// labels name the stack instance it is about.
func firing(t *testing.T, alertname, severity, instance string) json.RawMessage {
	t.Helper()
	labels := map[string]string{"alertname": alertname, "severity": severity, "stack_instance": instance}
	body, err := json.Marshal(map[string]any{
		"version": "4", "groupKey": `{}:{alertname="` + alertname + `"}`, "truncatedAlerts": 0, "status": "firing", "receiver": "nimbus",
		"groupLabels": map[string]string{"alertname": alertname}, "commonLabels": labels, "commonAnnotations": map[string]string{},
		"externalURL": "http://alertmanager:9093",
		"alerts": []map[string]any{{"status": "firing", "labels": labels, "annotations": map[string]string{"summary": "it broke"},
			"startsAt": "2026-11-27T01:00:00Z", "endsAt": "0001-01-01T00:00:00Z", "generatorURL": "http://prometheus:9090/graph",
			"fingerprint": alertname + "-" + severity}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// TestBrowser_AlertDegradesAStackInstance follows an alert from Alertmanager to the instance it
// names. A stack whose rule degrades an instance on a critical alert from a webhook is deployed
// into an environment of the webhook's landing zone; a warning and a critical alert are sent
// to the webhook as Alertmanager sends them. The instance's page shows it degraded by the
// event, and its link to its events leads to the log of that instance, where the critical
// alert names the rule that took it, the trigger it sent and how the run ended, and the
// warning is logged as matching no rule.
func TestBrowser_AlertDegradesAStackInstance(t *testing.T) {
	t.Parallel()
	a := startApp(t)
	ctx := context.Background()
	if _, err := component.EnsureBuiltins(ctx, component.NewService(a.pool, nil, nil)); err != nil {
		t.Fatal(err)
	}
	acme := a.createTenant(t, "acme")
	a.addMember(t, "ops@acme.test", acme.ID, access.TenantAdmin)
	root, ops := a.token(t, adminEmail), a.token(t, "ops@acme.test")

	// The landing zone's webhook, whose secret is shown once, on creation.
	var zone struct{ ID string }
	apiPost(t, a.url+"/api/v1/landing-zones", root, map[string]any{"name": "watched", "provider": "simcloud"}, &zone)
	var source struct{ URL, Secret string }
	apiPost(t, a.url+"/api/v1/landing-zones/"+zone.ID+"/event-sources", root, map[string]any{"name": "alertmanager", "kind": "webhook"}, &source)
	if source.URL == "" || source.Secret == "" {
		t.Fatalf("the new source gives %+v, want its URL and secret", source)
	}

	// The stack, published with its rule; an environment of the zone (these tests are about
	// events, not zones), and an instance of the stack in it.
	stackID := createStack(t, a, root, "watched", watchedStack(t, a, true))
	var published map[string]any
	apiPost(t, a.url+"/api/v1/stacks/"+stackID+"/publish", root, map[string]any{"changelog": "first"}, &published)
	env, err := environment.NewService(a.pool).Create(ctx, a.principal(t, adminEmail), acme.ID, "ops")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.pool.Exec(ctx, `UPDATE environments SET landing_zone_id = $1 WHERE id = $2`, zone.ID, env.ID); err != nil {
		t.Fatal(err)
	}
	var inst struct{ ID string }
	apiPost(t, a.url+"/api/v1/stack-instances", ops, map[string]any{"stack_id": stackID, "environment_id": env.ID, "name": "watched"}, &inst)
	instancePath := "/stack-instances/" + inst.ID

	s := newSession(t, newBrowser(t), a)
	s.signIn("ops@acme.test", userPassword)
	s.open(instancePath)
	s.across(`['active', 'failed'].includes(document.querySelector('[data-testid="instance-status"]')?.dataset.status)`, engineWait)
	if got, state := s.text(`[data-testid="instance-status"]`), s.text(`[data-testid="instance-state"]`); got != "active" || state != "active" {
		t.Fatalf("the instance ended %s in state %s: %s", got, state, s.text(`#instance-live`))
	}

	// Alertmanager sends a warning, then a critical alert, both naming the instance.
	for _, severity := range []string{"warning", "critical"} {
		alertname := map[string]string{"warning": "Slow", "critical": "Down"}[severity]
		status, _, body := httpCall(t, http.MethodPost, a.url+source.URL, source.Secret, firing(t, alertname, severity, inst.ID))
		if status != http.StatusAccepted {
			t.Fatalf("the %s alert answered %d: %s", severity, status, body)
		}
	}

	// The instance's page shows it degraded, by the event's trigger.
	s.reloadUntil(instancePath, `document.querySelector('[data-testid="instance-state"]')?.textContent.trim() === 'degraded'`, engineWait)
	if history := s.rows("state-history"); len(history) != 2 || history[0][0] != "active" || history[0][1] != "degraded" ||
		history[0][2] != "degrade" || !strings.Contains(history[0][3], "event") {
		t.Errorf("the states after the alert: %q", history)
	}
	if got := eval[[]string](s, `[...document.querySelectorAll('#state-diagram [data-current]')].map(g => g.dataset.name)`); len(got) != 1 || got[0] != "degraded" {
		t.Errorf("the state diagram marks %v, want degraded", got)
	}
	s.screenshot("stack-instance-degraded")

	// Its events: the log of this instance alone, where the critical alert names its rule, the
	// trigger and the run's end, and the warning matched no rule.
	s.follow(`[data-testid="instance-events"]`)
	if path, instance := s.path(), eval[string](s, `new URLSearchParams(location.search).get('stack_instance_id') ?? ''`); path != "/events" || instance != inst.ID {
		t.Fatalf("the instance's events link leads to %s for instance %q", path, instance)
	}
	alerts := `[...document.querySelectorAll('[data-testid="event"][data-type="alert.firing"]')]`
	byName := alerts + `.find(r => r.cells[3].textContent.trim() === %q)`
	s.waitWithin(fmt.Sprintf(byName+`?.cells[5].textContent.includes('succeeded') ?? false`, "Down"), engineWait)
	down := eval[map[string]string](s, fmt.Sprintf(`(r => ({outcome: r.dataset.outcome, what: r.cells[5].textContent.replace(/\s+/g, ' ').trim(),
		source: r.cells[1].textContent.trim(), instance: r.cells[4].querySelector('a')?.getAttribute('href') ?? ''}))(`+byName+`)`, "Down"))
	if down["outcome"] != "signalled" || down["source"] != "alertmanager" || down["instance"] != instancePath ||
		!strings.Contains(down["what"], "rule 1 sent degrade (run succeeded)") {
		t.Errorf("the critical alert's row: %v", down)
	}
	if got := eval[string](s, fmt.Sprintf(byName+`?.dataset.outcome ?? 'missing'`, "Slow")); got != "unmatched" {
		t.Errorf("the warning is %s, want unmatched", got)
	}
	if n := eval[int](s, alerts+`.length`); n != 2 {
		t.Errorf("the instance's log holds %d alerts, want 2", n)
	}
	s.screenshot("events-of-an-instance")
}

// TestBrowser_StackEditorRoutesEvents gives a stack a rule in the editor's Events panel: a
// filter that is not CEL is refused beside the rule, kept as typed, and once fixed the draft
// is published from the editor; the published version holds the rule, and a rule added and
// removed again leaves no trace.
func TestBrowser_StackEditorRoutesEvents(t *testing.T) {
	t.Parallel()
	a := startApp(t)
	if _, err := component.EnsureBuiltins(context.Background(), component.NewService(a.pool, nil, nil)); err != nil {
		t.Fatal(err)
	}
	root := a.token(t, adminEmail)
	stackID := createStack(t, a, root, "watched", watchedStack(t, a, false))
	editPath := "/stacks/" + stackID + "/edit"

	s := newSession(t, newBrowser(t), a)
	s.signIn(adminEmail, adminPassword)
	s.open(editPath)
	if n := eval[int](s, `document.querySelectorAll('[data-route]').length`); n != 0 {
		t.Fatalf("the stack starts with %d rules", n)
	}

	// A critical alert from a webhook degrades, with a filter written as if CEL compared with =.
	s.pressIn(`[data-op="add-route"]`)
	s.setField("r.0.source", "webhook")
	s.setField("r.0.type", "alert.firing")
	s.setField("r.0.filter", `event.data.labels.severity = "critical"`)
	s.setField("r.0.trigger", "degrade")
	s.pressIn(`[data-testid="routes"] [data-testid="save"]`)
	if got := eval[[]string](s, `[...document.querySelectorAll('[data-testid="problems"] li')].map(li => li.dataset.field)`); strings.Join(got, ",") != "routes.0.filter" {
		t.Fatalf("the draft's problems are at %q, want the rule's filter alone", got)
	}
	if msg := s.text(`[data-route="0"] [data-problem="routes.0"]`); !strings.Contains(msg, "Syntax error") || !strings.Contains(msg, "'= '") {
		t.Fatalf("beside the rule the editor says %q, want the filter's syntax error at its =", msg)
	}
	if got := eval[string](s, `document.querySelector('[name="r.0.filter"]').value`); got != `event.data.labels.severity = "critical"` {
		t.Fatalf("the filter typed is now %q, want it kept as typed", got)
	}
	s.screenshot("stack-editor-route-error")
	s.setField("r.0.filter", `event.data.labels.severity == "critical"`)

	// A second rule, added and removed again.
	s.pressIn(`[data-op="add-route"]`)
	if n := eval[int](s, `document.querySelectorAll('[data-route]').length`); n != 2 {
		t.Fatalf("after adding a second rule the editor shows %d", n)
	}
	s.pressIn(`[data-op="remove-route:1"]`)
	if n := eval[int](s, `document.querySelectorAll('[data-route]').length`); n != 1 {
		t.Fatalf("after removing the second rule the editor shows %d", n)
	}
	if eval[int](s, `document.querySelectorAll('[data-testid="no-problems"]').length`) != 1 {
		t.Fatalf("the fixed draft has problems: %q", s.text(`[data-testid="problems"]`))
	}
	s.screenshot("stack-editor-routes")

	s.setField("changelog", "degrade on critical alerts")
	s.pressIn(`[data-testid="publish"]`)
	if got := s.text(`[data-testid="published"]`); !strings.Contains(got, "Published v1") {
		t.Fatalf("the editor says %q after publishing", got)
	}
	var v stack.Version
	apiGet(t, a.url+"/api/v1/stacks/"+stackID+"/versions/1", root, &v)
	want := stack.Route{Source: "webhook", Type: "alert.firing", Filter: `event.data.labels.severity == "critical"`, Trigger: "degrade"}
	if v.Definition == nil || len(v.Definition.Routes) != 1 || v.Definition.Routes[0] != want {
		t.Fatalf("the published version's rules: %+v", v.Definition)
	}
}
