package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"nimbus/app/environment"
	"nimbus/app/stack"
	"nimbus/db/dbgen"
)

// editMachine changes a property of the cloud's one machine by hand, outside Nimbus, as the
// simulated cloud's own command does (pulumi-resource-simcloud edit machine <id> cores=4):
// the stored resource rewritten in place.
func editMachine(t *testing.T, s *site, property string, value any) {
	t.Helper()
	machines, _ := filepath.Glob(filepath.Join(s.cloud, "machine", "*.json"))
	if len(machines) != 1 {
		t.Fatalf("machines in the cloud: %v", machines)
	}
	raw, err := os.ReadFile(machines[0])
	must(t, err)
	var m map[string]any
	must(t, json.Unmarshal(raw, &m))
	m[property] = value
	raw, _ = json.MarshalIndent(m, "", "  ")
	must(t, os.WriteFile(machines[0], append(raw, '\n'), 0o644))
}

// machineCores is how many cores the cloud's one machine has.
func machineCores(t *testing.T, s *site) float64 {
	t.Helper()
	machines, _ := filepath.Glob(filepath.Join(s.cloud, "machine", "*.json"))
	if len(machines) != 1 {
		t.Fatalf("machines in the cloud: %v", machines)
	}
	raw, err := os.ReadFile(machines[0])
	must(t, err)
	var m struct{ Cores float64 }
	must(t, json.Unmarshal(raw, &m))
	return m.Cores
}

// waitDrift polls the deployment until its drift status is want, and returns it.
func (s *site) waitDrift(t *testing.T, token, id, want string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	var dep map[string]any
	for time.Now().Before(deadline) {
		dep = s.call(t, "GET", "/api/v1/deployments/"+id, token, nil).json(t)
		if dep["drift_status"] == want {
			return dep
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("deployment %s is not %s after 3 minutes: %v", id, want, dep)
	return nil
}

// driftEvents are the logged events of the type about the deployment.
func (s *site) driftEvents(t *testing.T, token, env, typ, deployment string) []map[string]any {
	t.Helper()
	r := s.call(t, "GET", "/api/v1/events?type="+typ+"&environment_id="+env, token, nil)
	wantStatus(t, r, http.StatusOK)
	var page struct{ Events []map[string]any }
	must(t, json.Unmarshal(r.body, &page))
	var out []map[string]any
	for _, e := range page.Events {
		if e["deployment_id"] == deployment {
			out = append(out, e)
		}
	}
	return out
}

// coresChange is the change of the machine's cores a drift lists, as "old → new".
func coresChange(t *testing.T, dep map[string]any) string {
	t.Helper()
	resources, _ := dep["drift"].([]any)
	for _, r := range resources {
		res := r.(map[string]any)
		if res["name"] != "machine" {
			continue
		}
		for _, c := range res["changes"].([]any) {
			if ch := c.(map[string]any); ch["path"] == "cores" {
				return fmt.Sprintf("%v → %v", ch["old"], ch["new"])
			}
		}
	}
	return ""
}

func TestDrift_ScheduledCheckFindsItReconcilePutsItBackAcceptAdoptsIt(t *testing.T) {
	s := newSite(t)
	env, err := environment.NewService(s.pool).Create(t.Context(), s.adminA, s.a.ID, "dev")
	must(t, err)
	envID := env.ID.String()
	user, admin := s.token(t, s.userA), s.token(t, s.adminA)

	r := s.call(t, "POST", "/api/v1/deployments", user, map[string]any{
		"component_id": s.shared.ID, "environment_id": env.ID, "name": "web", "parameters": map[string]any{"name": "web-1", "cores": 2},
	})
	wantStatus(t, r, http.StatusAccepted)
	body := r.json(t)
	depID := body["deployment"].(map[string]any)["id"].(string)
	if op := s.waitOperation(t, user, body["operation"].(map[string]any)["id"].(string)); op["status"] != "succeeded" {
		t.Fatalf("deploy: %v", op)
	}
	if dep := s.call(t, "GET", "/api/v1/deployments/"+depID, user, nil).json(t); dep["drift_status"] != "unknown" {
		t.Fatalf("a deployment never checked: %v", dep["drift_status"])
	}

	// The environment's schedule: its tenant's admins set it, clearly refused when wrong.
	path := "/api/v1/environments/" + envID + "/drift-interval"
	wantStatus(t, s.call(t, "PUT", path, user, map[string]any{"drift_interval": "1s"}), http.StatusForbidden)
	r = s.call(t, "PUT", path, admin, map[string]any{"drift_interval": "soon"})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.body), "drift_interval") || !strings.Contains(string(r.body), "6h") {
		t.Fatalf("a bad interval: %s", r.body)
	}
	// Tenant admins check at most every 15 minutes; the provider may check as often as it likes.
	r = s.call(t, "PUT", path, admin, map[string]any{"drift_interval": "1s"})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.body), `"rule":"minimum"`) {
		t.Fatalf("a tenant admin's 1s interval: %s", r.body)
	}
	r = s.call(t, "PUT", path, s.token(t, s.admin), map[string]any{"drift_interval": "1s"})
	wantStatus(t, r, http.StatusOK)
	if got := r.json(t); got["effective"] != "1s" || got["zone"] != nil {
		t.Fatalf("the environment's interval: %s", r.body)
	}

	// The machine is changed behind Nimbus's back; the scheduled check finds it.
	editMachine(t, s, "cores", 4)
	dep := s.waitDrift(t, user, depID, "drifted")
	if got := coresChange(t, dep); got != "2 → 4" {
		t.Fatalf("the drift of the machine's cores: %q in %v", got, dep["drift"])
	}
	if dep["drift_checked_at"] == nil {
		t.Fatalf("a checked deployment says no time: %v", dep)
	}
	checks := s.call(t, "GET", "/api/v1/operations?kind=drift_check&deployment_id="+depID, user, nil).json(t)["operations"].([]any)
	if len(checks) == 0 || checks[len(checks)-1].(map[string]any)["requested_by"] != nil {
		t.Fatalf("the scheduled checks: %v, want checks no one asked for", checks)
	}
	detected := s.driftEvents(t, admin, envID, "drift.detected", depID)
	if len(detected) != 1 || !strings.Contains(string(mustJSON(t, detected[0]["payload"])), `"cores"`) {
		t.Fatalf("drift.detected events of the deployment: %v", detected)
	}
	b := newBrowser(t, s.url)
	b.signIn(t, "user-a@example.com", "long enough password")
	page := string(b.get(t, "/deployments/"+depID).body)
	for _, want := range []string{`data-testid="drift-status">drifted<`, `data-path="cores">cores: 2 → 4<`, `data-testid="reconcile"`, `data-testid="accept"`} {
		if !strings.Contains(page, want) {
			t.Fatalf("the deployment page does not show %s: %.3000s", want, page[strings.Index(page, `id="drift"`):])
		}
	}
	if home := string(b.get(t, "/").body); !strings.Contains(home, `data-testid="drifted-count">1<`) {
		t.Fatalf("the dashboard does not count the drifted deployment: %.2000s", home)
	}

	// Reconcile puts the machine back as declared.
	r = s.call(t, "POST", "/api/v1/deployments/"+depID+"/reconcile", user, nil)
	wantStatus(t, r, http.StatusAccepted)
	if op := s.waitOperation(t, user, r.json(t)["id"].(string)); op["status"] != "succeeded" || op["kind"] != "update" || op["refresh"] != true {
		t.Fatalf("reconcile: %v", op)
	}
	if cores := machineCores(t, s); cores != 2 {
		t.Fatalf("after the reconcile the machine has %v cores, want 2 as declared", cores)
	}
	if dep := s.call(t, "GET", "/api/v1/deployments/"+depID, user, nil).json(t); dep["drift_status"] != "in_sync" || len(dep["drift"].([]any)) != 0 {
		t.Fatalf("after the reconcile: %v %v", dep["drift_status"], dep["drift"])
	}
	if resolved := s.driftEvents(t, admin, envID, "drift.resolved", depID); len(resolved) != 1 {
		t.Fatalf("drift.resolved events after the reconcile: %v", resolved)
	}

	// A second drift, checked from the deployment page, is accepted there: the cloud stays as
	// it is, and is what the deployment holds from now on.
	editMachine(t, s, "cores", 6)
	b.get(t, "/deployments/"+depID)
	button := func(action string) map[string]any {
		t.Helper()
		r := b.post(t, "/deployments/"+depID+"/"+action, url.Values{"_csrf": {b.csrf}})
		wantStatus(t, r, http.StatusSeeOther)
		return s.waitOperation(t, user, strings.TrimPrefix(r.header.Get("Location"), "/operations/"))
	}
	if op := button("drift-check"); op["status"] != "succeeded" || op["kind"] != "drift_check" {
		t.Fatalf("drift check: %v", op)
	}
	if dep := s.waitDrift(t, user, depID, "drifted"); coresChange(t, dep) != "2 → 6" {
		t.Fatalf("the second drift: %v", dep["drift"])
	}
	if op := button("refresh"); op["status"] != "succeeded" || op["kind"] != "refresh" {
		t.Fatalf("accept: %v", op)
	}
	if dep := s.call(t, "GET", "/api/v1/deployments/"+depID, user, nil).json(t); dep["drift_status"] != "in_sync" {
		t.Fatalf("after the accept: %v", dep["drift_status"])
	}
	if cores := machineCores(t, s); cores != 6 {
		t.Fatalf("the accept changed the machine: %v cores, want the 6 it was given by hand", cores)
	}
	r = s.call(t, "POST", "/api/v1/deployments/"+depID+"/drift-checks", user, nil)
	wantStatus(t, r, http.StatusAccepted)
	s.waitOperation(t, user, r.json(t)["id"].(string))
	if dep := s.call(t, "GET", "/api/v1/deployments/"+depID, user, nil).json(t); dep["drift_status"] != "in_sync" {
		t.Fatalf("a check after the accept: %v %v", dep["drift_status"], dep["drift"])
	}
	if detected := s.driftEvents(t, admin, envID, "drift.detected", depID); len(detected) != 2 {
		t.Fatalf("drift.detected events: %d, want one per drift", len(detected))
	}

	// Readers may not check; zero turns the schedule off for the environment.
	reader := s.token(t, s.readerA)
	wantStatus(t, s.call(t, "POST", "/api/v1/deployments/"+depID+"/drift-checks", reader, nil), http.StatusForbidden)
	r = s.call(t, "PUT", path, admin, map[string]any{"drift_interval": "0s"})
	wantStatus(t, r, http.StatusOK)
	if got := r.json(t); got["effective"] != nil || got["own"] != "0s" {
		t.Fatalf("the interval turned off: %s", r.body)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	must(t, err)
	return b
}

// A deployment's checks are due by its environment's own interval, else its zone's; an
// environment's zero turns its zone's off, and a deployment with an operation under way waits.
func TestDrift_DueByTheEnvironmentElseItsZone(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	d := w.live(t)
	zone := w.zone(t).zone.ID
	_, err := w.pool.Exec(ctx, `UPDATE environments SET landing_zone_id = $1 WHERE id = $2`, zone, d.EnvironmentID)
	must(t, err)
	// Made ten minutes ago.
	_, err = w.pool.Exec(ctx, `UPDATE deployed_components SET created_at = now() - interval '10 minutes' WHERE id = $1`, d.ID)
	must(t, err)
	due := func() bool {
		t.Helper()
		ids, err := dbgen.New(w.pool).DriftDue(ctx, 50)
		must(t, err)
		return slices.Contains(ids, d.ID)
	}
	minutes := func(n int) *time.Duration { d := time.Duration(n) * time.Minute; return &d }
	steps := []struct {
		name      string
		zone, env *time.Duration
		want      bool
	}{
		{"neither set", nil, nil, false},
		{"the zone's, passed", minutes(5), nil, true},
		{"the environment's own, not yet", minutes(5), minutes(60), false},
		{"the environment's own, passed", minutes(60), minutes(5), true},
		{"the environment's zero", minutes(5), new(time.Duration), false},
	}
	for _, st := range steps {
		_, err := w.deploys.SetZoneDriftInterval(ctx, w.admin, zone, st.zone)
		must(t, err)
		_, err = w.deploys.SetEnvironmentDriftInterval(ctx, w.admin, d.EnvironmentID, st.env)
		must(t, err)
		if got := due(); got != st.want {
			t.Errorf("%s: due %v, want %v", st.name, got, st.want)
		}
	}

	_, err = w.deploys.SetEnvironmentDriftInterval(ctx, w.admin, d.EnvironmentID, minutes(5))
	must(t, err)
	op, err := w.deploys.CheckDrift(ctx, w.userA, d.ID)
	must(t, err)
	if due() {
		t.Error("a deployment with a check queued is due again")
	}
	w.succeed(t, op.ID)
	if due() {
		t.Error("a deployment checked just now is due again")
	}
}

// A drift of a stack instance's slot is routed to the instance: a route of its version can
// degrade it, and the drift's end recover it. The slot is accepted, never reconciled, by hand.
func TestDrift_ASlotsDriftMovesItsStackInstance(t *testing.T) {
	s := newSite(t)
	root, user := s.token(t, s.admin), s.token(t, s.userA)
	ids := builtinIDs(t, s)
	def := stack.Definition{
		Parameters: json.RawMessage(`{"type":"object","properties":{}}`),
		Slots: []stack.Slot{{Name: "vm", Component: uuid.MustParse(ids["simcloud-machine"]), Version: 1, Inputs: map[string]stack.Wiring{
			"name": {Kind: stack.Literal, Value: "slot-vm"}}}},
		Machine: stack.Machine{
			States: []stack.State{{Name: "active", Initial: true}, {Name: "degraded"}},
			Transitions: []stack.Transition{
				{From: "active", To: "degraded", Trigger: "degrade"},
				{From: "degraded", To: "active", Trigger: "recover"},
			},
		},
		Routes: []stack.Route{{Source: "nimbus", Type: "drift.detected", Trigger: "degrade"}, {Source: "nimbus", Type: "drift.resolved", Trigger: "recover"}},
	}
	r := s.call(t, "POST", "/api/v1/stacks", root, map[string]any{"provider": "simcloud", "name": "drifting", "draft": def})
	wantStatus(t, r, http.StatusCreated)
	stackID := r.json(t)["id"].(string)
	wantStatus(t, s.call(t, "POST", "/api/v1/stacks/"+stackID+"/publish", root, map[string]any{"changelog": "first"}), http.StatusCreated)
	env, err := environment.NewService(s.pool).Create(t.Context(), s.adminA, s.a.ID, "ops")
	must(t, err)
	r = s.call(t, "POST", "/api/v1/stack-instances", user, map[string]any{"stack_id": stackID, "environment_id": env.ID, "name": "drifting"})
	wantStatus(t, r, http.StatusAccepted)
	id := r.json(t)["id"].(string)
	if inst := s.waitInstance(t, user, id, status("active", "failed")); inst["state"] != "active" {
		t.Fatalf("deploy: %v", inst)
	}
	var depID string
	must(t, s.pool.QueryRow(t.Context(), `SELECT id::text FROM deployed_components WHERE stack_instance_id = $1`, id).Scan(&depID))

	editMachine(t, s, "cores", 8)
	r = s.call(t, "POST", "/api/v1/deployments/"+depID+"/drift-checks", user, nil)
	wantStatus(t, r, http.StatusAccepted)
	s.waitOperation(t, user, r.json(t)["id"].(string))
	s.waitInstance(t, user, id, func(m map[string]any) bool { return m["state"] == "degraded" && m["status"] == "active" })
	r = s.call(t, "GET", "/api/v1/events?type=drift.detected&stack_instance_id="+id, user, nil)
	wantStatus(t, r, http.StatusOK)
	detected := r.json(t)["events"].([]any)
	if len(detected) != 1 || detected[0].(map[string]any)["trigger"] != "degrade" || detected[0].(map[string]any)["outcome"] != "signalled" {
		t.Fatalf("the slot's drift.detected: %s", r.body)
	}

	// Its instance changes the slot: a reconcile by hand is refused, naming why.
	r = s.call(t, "POST", "/api/v1/deployments/"+depID+"/reconcile", user, nil)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.body), "stack instance") {
		t.Fatalf("a slot reconciled by hand: %s", r.body)
	}
	r = s.call(t, "POST", "/api/v1/deployments/"+depID+"/refresh", user, nil)
	wantStatus(t, r, http.StatusAccepted)
	s.waitOperation(t, user, r.json(t)["id"].(string))
	s.waitInstance(t, user, id, func(m map[string]any) bool { return m["state"] == "active" && m["status"] == "active" })
}
