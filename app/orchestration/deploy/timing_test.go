package deploy_test

import (
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"nimbus/app/apptest"
	"nimbus/app/orchestration/environment"
)

// A deploy's timing, on its API and its page, lays its whole time out part by part: the queue
// first, then each of its steps in order, the engine inside its up, and Nimbus's own time
// between them; the parts follow each other without overlap and add up to its duration.
func TestTiming_DeployAddsUpToItsDuration(t *testing.T) {
	s := apptest.NewSiteWith(t, apptest.SiteConfig{Backend: "file"})
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	user := s.Token(t, s.UserA)
	r := s.Call(t, "POST", "/api/v1/deployments", user, map[string]any{
		"component_id": s.Shared.ID, "environment_id": env.ID, "name": "web", "parameters": map[string]any{"name": "timed-machine"}})
	apptest.WantStatus(t, r, http.StatusAccepted)
	id := r.JSON(t)["operation"].(map[string]any)["id"].(string)
	op := s.WaitOperation(t, user, id)
	if op["status"] != "succeeded" {
		t.Fatalf("the deploy did not succeed: %v", op)
	}

	parts := timingOf(t, op)
	if got, want := stepsOf(parts), []string{"resolve", "govern", "preview", "approve", "up", "record"}; !slices.Equal(got, want) {
		t.Errorf("the timing's steps are %q, want %q", got, want)
	}
	if parts[0].kind != "queue" {
		t.Errorf("the timing begins with %s, want the queue", parts[0].kind)
	}
	i := slices.IndexFunc(parts, func(p part) bool { return p.name == "up" })
	if i < 0 {
		t.FailNow()
	}
	if up := parts[i]; up.engine == nil || up.engine.start.Before(up.start) || up.engine.end.After(up.end) || up.engine.ms <= 0 {
		t.Errorf("the up step (%s–%s) has engine time %+v, want it inside", up.start, up.end, up.engine)
	}

	b := apptest.NewBrowser(t, s.URL)
	b.SignIn(t, "user-a@example.com", "long enough password")
	page := string(b.Get(t, "/operations/"+id).Body)
	for _, want := range []string{`data-testid="timing"`, "In the queue", `data-kind="step"`, ">up<"} {
		if !strings.Contains(page, want) {
			t.Errorf("the operation's page shows no %q in its timing", want)
		}
	}
}

// Waiting for approval is a part of its own, between the preview that asked for it and the
// steps that went on once approved.
func TestTiming_ApprovalWaitIsItsOwnPart(t *testing.T) {
	g := apptest.NewGated(t, apptest.SiteConfig{Backend: "file"})
	g.Policy(t, g.As.Admin, map[string]any{"scope": "environment", "scope_id": g.Env, "operations": []string{"destroy"},
		"approver_role": "tenant_admin"})
	op, req := g.Destroy(t)
	seen := time.Now() // it waited from before this
	apptest.WantStatus(t, g.Call(t, "GET", "/api/v1/approvals/"+req["id"].(string), g.As.Admin2, nil), http.StatusOK)
	asked := time.Now() // to after this
	g.Decide(t, g.As.Admin2, req["id"].(string), "approve", "", http.StatusOK)
	if op = g.WaitOperation(t, g.As.Admin, op["id"].(string)); op["status"] != "succeeded" {
		t.Fatalf("the approved destroy: %v", op)
	}

	parts := timingOf(t, op)
	var kinds []string
	for _, p := range parts {
		if p.kind != "nimbus" {
			kinds = append(kinds, p.kind+" "+p.name)
		}
	}
	want := []string{"queue queue", "step preview", "approval approval", "step approve", "step destroy", "step record"}
	if !slices.Equal(kinds, want) {
		t.Errorf("the timing's parts are %q, want %q", kinds, want)
	}
	i := slices.IndexFunc(parts, func(p part) bool { return p.kind == "approval" })
	if i < 0 {
		t.FailNow()
	}
	if wait, least := parts[i], float64(asked.Sub(seen).Microseconds())/1000; wait.ms < least {
		t.Errorf("the wait for approval took %.3f ms, want at least the %.3f ms the approver took to look", wait.ms, least)
	}
}

type spell struct {
	start, end time.Time
	ms         float64
}

type part struct {
	spell
	kind, name string
	engine     *spell
}

// timingOf reads an ended operation's timing from its API answer, and holds it to its duration:
// the parts begin as the operation was created, each where the one before ended, the last as
// it finished, none negative, their durations adding up to the whole.
func timingOf(t *testing.T, op map[string]any) []part {
	t.Helper()
	timing, ok := op["timing"].(map[string]any)
	if !ok {
		t.Fatalf("the operation has no timing: %v", op)
	}
	at := func(v any) time.Time {
		ts, err := time.Parse(time.RFC3339Nano, v.(string))
		apptest.Must(t, err)
		return ts
	}
	spellOf := func(m map[string]any) spell {
		return spell{start: at(m["started_at"]), end: at(m["ended_at"]), ms: m["duration_ms"].(float64)}
	}
	list, _ := timing["parts"].([]any)
	var parts []part
	for _, v := range list {
		m := v.(map[string]any)
		p := part{spell: spellOf(m), kind: m["kind"].(string), name: m["name"].(string)}
		if e, ok := m["engine"].(map[string]any); ok {
			sp := spellOf(e)
			p.engine = &sp
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		t.Fatal("the timing has no parts")
	}
	created, finished := at(op["created_at"]), at(op["finished_at"])
	whole := float64(finished.Sub(created).Microseconds()) / 1000
	if d := timing["duration_ms"].(float64); math.Abs(d-whole) > 1 {
		t.Errorf("the timing says the operation took %.3f ms; its row, %.3f ms", d, whole)
	}
	cursor, sum := created, 0.0
	for _, p := range parts {
		if !p.start.Equal(cursor) {
			t.Errorf("%s %s begins at %s, not where the part before ended (%s)", p.kind, p.name, p.start, cursor)
		}
		if p.ms < 0 || p.end.Before(p.start) {
			t.Errorf("%s %s took %.3f ms (%s–%s)", p.kind, p.name, p.ms, p.start, p.end)
		}
		cursor = p.end
		sum += p.ms
	}
	if !cursor.Equal(finished) {
		t.Errorf("the last part ends at %s, the operation at %s", cursor, finished)
	}
	if math.Abs(sum-whole) > 1 {
		t.Errorf("the parts add up to %.3f ms, the operation took %.3f ms: %+v", sum, whole, parts)
	}
	return parts
}

func stepsOf(parts []part) []string {
	var out []string
	for _, p := range parts {
		if p.kind == "step" {
			out = append(out, p.name)
		}
	}
	return out
}
