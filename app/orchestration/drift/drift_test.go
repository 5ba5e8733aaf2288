package drift_test

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

	"nimbus/app/apptest"
	"nimbus/app/domain/stack"
	"nimbus/app/orchestration/environment"
	"nimbus/db"
)

// editMachine changes a property of the cloud's one machine by hand, outside Nimbus, as the
// simulated cloud's own command does (pulumi-resource-simcloud edit machine <id> cores=4):
// the stored resource rewritten in place.
func editMachine(t *testing.T, s *apptest.Site, property string, value any) {
	t.Helper()
	machines, _ := filepath.Glob(filepath.Join(s.Cloud, "machine", "*.json"))
	if len(machines) != 1 {
		t.Fatalf("machines in the cloud: %v", machines)
	}
	raw, err := os.ReadFile(machines[0])
	apptest.Must(t, err)
	var m map[string]any
	apptest.Must(t, json.Unmarshal(raw, &m))
	m[property] = value
	raw, _ = json.MarshalIndent(m, "", "  ")
	apptest.Must(t, os.WriteFile(machines[0], append(raw, '\n'), 0o644))
}

// machineCores is how many cores the cloud's one machine has.
func machineCores(t *testing.T, s *apptest.Site) float64 {
	t.Helper()
	machines, _ := filepath.Glob(filepath.Join(s.Cloud, "machine", "*.json"))
	if len(machines) != 1 {
		t.Fatalf("machines in the cloud: %v", machines)
	}
	raw, err := os.ReadFile(machines[0])
	apptest.Must(t, err)
	var m struct{ Cores float64 }
	apptest.Must(t, json.Unmarshal(raw, &m))
	return m.Cores
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
	s := apptest.NewSite(t)
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	envID := env.ID.String()
	user, admin := s.Token(t, s.UserA), s.Token(t, s.AdminA)

	r := s.Call(t, "POST", "/api/v1/deployments", user, map[string]any{
		"component_id": s.Shared.ID, "environment_id": env.ID, "name": "web", "parameters": map[string]any{"name": "web-1", "cores": 2},
	})
	apptest.WantStatus(t, r, http.StatusAccepted)
	body := r.JSON(t)
	depID := body["deployment"].(map[string]any)["id"].(string)
	if op := s.WaitOperation(t, user, body["operation"].(map[string]any)["id"].(string)); op["status"] != "succeeded" {
		t.Fatalf("deploy: %v", op)
	}
	if dep := s.Call(t, "GET", "/api/v1/deployments/"+depID, user, nil).JSON(t); dep["drift_status"] != "unknown" {
		t.Fatalf("a deployment never checked: %v", dep["drift_status"])
	}

	// The environment's schedule: its tenant's admins set it, clearly refused when wrong.
	path := "/api/v1/environments/" + envID + "/drift-interval"
	apptest.WantStatus(t, s.Call(t, "PUT", path, user, map[string]any{"drift_interval": "1s"}), http.StatusForbidden)
	r = s.Call(t, "PUT", path, admin, map[string]any{"drift_interval": "soon"})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), "drift_interval") || !strings.Contains(string(r.Body), "6h") {
		t.Fatalf("a bad interval: %s", r.Body)
	}
	// Tenant admins check at most every 15 minutes; the provider may check as often as it likes.
	r = s.Call(t, "PUT", path, admin, map[string]any{"drift_interval": "1s"})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), `"rule":"minimum"`) {
		t.Fatalf("a tenant admin's 1s interval: %s", r.Body)
	}
	r = s.Call(t, "PUT", path, s.Token(t, s.Admin), map[string]any{"drift_interval": "1s"})
	apptest.WantStatus(t, r, http.StatusOK)
	if got := r.JSON(t); got["effective"] != "1s" || got["zone"] != nil {
		t.Fatalf("the environment's interval: %s", r.Body)
	}

	// The machine is changed behind Nimbus's back; the scheduled check finds it.
	editMachine(t, s, "cores", 4)
	dep := s.WaitDrift(t, user, depID, "drifted")
	if got := coresChange(t, dep); got != "2 → 4" {
		t.Fatalf("the drift of the machine's cores: %q in %v", got, dep["drift"])
	}
	if dep["drift_checked_at"] == nil {
		t.Fatalf("a checked deployment says no time: %v", dep)
	}
	checks := s.Call(t, "GET", "/api/v1/operations?kind=drift_check&deployment_id="+depID, user, nil).JSON(t)["operations"].([]any)
	if len(checks) == 0 || checks[len(checks)-1].(map[string]any)["requested_by"] != nil {
		t.Fatalf("the scheduled checks: %v, want checks no one asked for", checks)
	}
	detected := s.DriftEvents(t, admin, envID, "drift.detected", depID)
	if len(detected) != 1 || !strings.Contains(string(mustJSON(t, detected[0]["payload"])), `"cores"`) {
		t.Fatalf("drift.detected events of the deployment: %v", detected)
	}
	b := apptest.NewBrowser(t, s.URL)
	b.SignIn(t, "user-a@example.com", "long enough password")
	page := string(b.Get(t, "/deployments/"+depID).Body)
	for _, want := range []string{`data-testid="drift-status">drifted<`, `data-path="cores">cores: 2 → 4<`, `data-testid="reconcile"`, `data-testid="accept"`} {
		if !strings.Contains(page, want) {
			t.Fatalf("the deployment page does not show %s: %.3000s", want, page[strings.Index(page, `id="drift"`):])
		}
	}
	if home := string(b.Get(t, "/").Body); !strings.Contains(home, `data-testid="drifted-count">1<`) {
		t.Fatalf("the dashboard does not count the drifted deployment: %.2000s", home)
	}

	// Reconcile puts the machine back as declared.
	r = s.Call(t, "POST", "/api/v1/deployments/"+depID+"/reconcile", user, nil)
	apptest.WantStatus(t, r, http.StatusAccepted)
	if op := s.WaitOperation(t, user, r.JSON(t)["id"].(string)); op["status"] != "succeeded" || op["kind"] != "update" || op["refresh"] != true {
		t.Fatalf("reconcile: %v", op)
	}
	if cores := machineCores(t, s); cores != 2 {
		t.Fatalf("after the reconcile the machine has %v cores, want 2 as declared", cores)
	}
	if dep := s.Call(t, "GET", "/api/v1/deployments/"+depID, user, nil).JSON(t); dep["drift_status"] != "in_sync" || len(dep["drift"].([]any)) != 0 {
		t.Fatalf("after the reconcile: %v %v", dep["drift_status"], dep["drift"])
	}
	if resolved := s.DriftEvents(t, admin, envID, "drift.resolved", depID); len(resolved) != 1 {
		t.Fatalf("drift.resolved events after the reconcile: %v", resolved)
	}

	// A second drift, checked from the deployment page, is accepted there: the cloud stays as
	// it is, and is what the deployment holds from now on.
	editMachine(t, s, "cores", 6)
	b.Get(t, "/deployments/"+depID)
	button := func(action string) map[string]any {
		t.Helper()
		r := b.Post(t, "/deployments/"+depID+"/"+action, url.Values{"_csrf": {b.CSRF}})
		apptest.WantStatus(t, r, http.StatusSeeOther)
		return s.WaitOperation(t, user, strings.TrimPrefix(r.Header.Get("Location"), "/operations/"))
	}
	op := button("drift-check")
	if op["status"] != "succeeded" || op["kind"] != "drift_check" {
		t.Fatalf("drift check: %v", op)
	}
	apptest.WantIn(t, b.Get(t, "/operations/"+op["id"].(string)), "<title>Drift check of web",
		`data-testid="drift-finding">Drift found: machine (cores) differ from what the stack recorded.<`)
	if dep := s.WaitDrift(t, user, depID, "drifted"); coresChange(t, dep) != "2 → 6" {
		t.Fatalf("the second drift: %v", dep["drift"])
	}
	if op := button("refresh"); op["status"] != "succeeded" || op["kind"] != "refresh" {
		t.Fatalf("accept: %v", op)
	}
	if dep := s.Call(t, "GET", "/api/v1/deployments/"+depID, user, nil).JSON(t); dep["drift_status"] != "in_sync" {
		t.Fatalf("after the accept: %v", dep["drift_status"])
	}
	if cores := machineCores(t, s); cores != 6 {
		t.Fatalf("the accept changed the machine: %v cores, want the 6 it was given by hand", cores)
	}
	r = s.Call(t, "POST", "/api/v1/deployments/"+depID+"/drift-checks", user, nil)
	apptest.WantStatus(t, r, http.StatusAccepted)
	check := s.WaitOperation(t, user, r.JSON(t)["id"].(string))
	if dep := s.Call(t, "GET", "/api/v1/deployments/"+depID, user, nil).JSON(t); dep["drift_status"] != "in_sync" {
		t.Fatalf("a check after the accept: %v %v", dep["drift_status"], dep["drift"])
	}
	apptest.WantIn(t, b.Get(t, "/operations/"+check["id"].(string)), `data-testid="drift-finding">No drift found: every resource is as the stack recorded it.<`)
	if detected := s.DriftEvents(t, admin, envID, "drift.detected", depID); len(detected) != 2 {
		t.Fatalf("drift.detected events: %d, want one per drift", len(detected))
	}

	// Readers may not check; zero turns the schedule off for the environment.
	reader := s.Token(t, s.ReaderA)
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/deployments/"+depID+"/drift-checks", reader, nil), http.StatusForbidden)
	r = s.Call(t, "PUT", path, admin, map[string]any{"drift_interval": "0s"})
	apptest.WantStatus(t, r, http.StatusOK)
	if got := r.JSON(t); got["effective"] != nil || got["own"] != "0s" {
		t.Fatalf("the interval turned off: %s", r.Body)
	}
}

// TestDrift_AMachineStoppedByHandIsDrift: the power state the cloud reports beside the inputs
// is compared too, so a machine stopped outside Nimbus is drift, not "in sync".
func TestDrift_AMachineStoppedByHandIsDrift(t *testing.T) {
	s := apptest.NewSite(t)
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	user := s.Token(t, s.UserA)
	r := s.Call(t, "POST", "/api/v1/deployments", user, map[string]any{
		"component_id": s.Shared.ID, "environment_id": env.ID, "name": "web", "parameters": map[string]any{"name": "web-1"},
	})
	apptest.WantStatus(t, r, http.StatusAccepted)
	body := r.JSON(t)
	depID := body["deployment"].(map[string]any)["id"].(string)
	if op := s.WaitOperation(t, user, body["operation"].(map[string]any)["id"].(string)); op["status"] != "succeeded" {
		t.Fatalf("deploy: %v", op)
	}
	editMachine(t, s, "status", "stopped")
	r = s.Call(t, "POST", "/api/v1/deployments/"+depID+"/drift-checks", user, nil)
	apptest.WantStatus(t, r, http.StatusAccepted)
	s.WaitOperation(t, user, r.JSON(t)["id"].(string))
	dep := s.Call(t, "GET", "/api/v1/deployments/"+depID, user, nil).JSON(t)
	if dep["drift_status"] != "drifted" || !strings.Contains(string(mustJSON(t, dep["drift"])), `"path":"status"`) {
		t.Fatalf("a stopped machine: %v %s", dep["drift_status"], mustJSON(t, dep["drift"]))
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	apptest.Must(t, err)
	return b
}

// A deployment's checks are due by its environment's own interval, else its zone's; an
// environment's zero turns its zone's off, and a deployment with an operation under way waits.
func TestDrift_DueByTheEnvironmentElseItsZone(t *testing.T) {
	w := apptest.NewWorld(t)
	ctx := t.Context()
	d := w.Live(t)
	zone := w.Zone(t).Zone.ID
	_, err := w.Pool.Exec(ctx, `UPDATE environments SET landing_zone_id = $1 WHERE id = $2`, zone, d.EnvironmentID)
	apptest.Must(t, err)
	// Made ten minutes ago.
	_, err = w.Pool.Exec(ctx, `UPDATE deployed_components SET created_at = now() - interval '10 minutes' WHERE id = $1`, d.ID)
	apptest.Must(t, err)
	due := func() bool {
		t.Helper()
		ids, err := db.Queries(w.Pool).DriftDue(ctx, 50)
		apptest.Must(t, err)
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
		_, err := w.Drift.SetZoneInterval(ctx, w.Admin, zone, st.zone)
		apptest.Must(t, err)
		_, err = w.Drift.SetEnvironmentInterval(ctx, w.Admin, d.EnvironmentID, st.env)
		apptest.Must(t, err)
		if got := due(); got != st.want {
			t.Errorf("%s: due %v, want %v", st.name, got, st.want)
		}
	}

	_, err = w.Drift.SetEnvironmentInterval(ctx, w.Admin, d.EnvironmentID, minutes(5))
	apptest.Must(t, err)
	op, err := w.Deploys.CheckDrift(ctx, w.UserA, d.ID)
	apptest.Must(t, err)
	if due() {
		t.Error("a deployment with a check queued is due again")
	}
	w.Succeed(t, op.ID)
	if due() {
		t.Error("a deployment checked just now is due again")
	}
}

// A drift of a stack instance's slot is routed to the instance: a route of its version can
// degrade it, and the drift's end recover it. The slot is accepted, never reconciled, by hand.
func TestDrift_ASlotsDriftMovesItsStackInstance(t *testing.T) {
	s := apptest.NewSite(t)
	root, user := s.Token(t, s.Admin), s.Token(t, s.UserA)
	ids := apptest.BuiltinIDs(t, s)
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
	r := s.Call(t, "POST", "/api/v1/stacks", root, map[string]any{"provider": "simcloud", "name": "drifting", "draft": def})
	apptest.WantStatus(t, r, http.StatusCreated)
	stackID := r.JSON(t)["id"].(string)
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/stacks/"+stackID+"/publish", root, map[string]any{"changelog": "first"}), http.StatusCreated)
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "ops")
	apptest.Must(t, err)
	r = s.Call(t, "POST", "/api/v1/stack-instances", user, map[string]any{"stack_id": stackID, "environment_id": env.ID, "name": "drifting"})
	apptest.WantStatus(t, r, http.StatusAccepted)
	id := r.JSON(t)["id"].(string)
	if inst := s.WaitInstance(t, user, id, apptest.Status("active", "failed")); inst["state"] != "active" {
		t.Fatalf("deploy: %v", inst)
	}
	var depID string
	apptest.Must(t, s.Pool.QueryRow(t.Context(), `SELECT id::text FROM deployed_components WHERE stack_instance_id = $1`, id).Scan(&depID))

	editMachine(t, s, "cores", 8)
	r = s.Call(t, "POST", "/api/v1/deployments/"+depID+"/drift-checks", user, nil)
	apptest.WantStatus(t, r, http.StatusAccepted)
	s.WaitOperation(t, user, r.JSON(t)["id"].(string))
	s.WaitInstance(t, user, id, func(m map[string]any) bool { return m["state"] == "degraded" && m["status"] == "active" })
	r = s.Call(t, "GET", "/api/v1/events?type=drift.detected&stack_instance_id="+id, user, nil)
	apptest.WantStatus(t, r, http.StatusOK)
	detected := r.JSON(t)["events"].([]any)
	if len(detected) != 1 || detected[0].(map[string]any)["trigger"] != "degrade" || detected[0].(map[string]any)["outcome"] != "signalled" {
		t.Fatalf("the slot's drift.detected: %s", r.Body)
	}

	// Its instance changes the slot: a reconcile by hand is refused, naming why.
	r = s.Call(t, "POST", "/api/v1/deployments/"+depID+"/reconcile", user, nil)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), "stack instance") {
		t.Fatalf("a slot reconciled by hand: %s", r.Body)
	}
	r = s.Call(t, "POST", "/api/v1/deployments/"+depID+"/refresh", user, nil)
	apptest.WantStatus(t, r, http.StatusAccepted)
	s.WaitOperation(t, user, r.JSON(t)["id"].(string))
	s.WaitInstance(t, user, id, func(m map[string]any) bool { return m["state"] == "active" && m["status"] == "active" })
}
