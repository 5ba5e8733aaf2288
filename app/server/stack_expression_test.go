package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/environment"
	"nimbus/app/stack"
)

// issue30 is the pattern a tenant wired over a 100 KB parameter: three thousand steps of RE2's
// program, seconds a match, and every view of the plan matched it again.
const issue30 = "[a-z]{1000}[a-z]{1000}[a-z]{1000}x"

// matching is a tenant's stack whose network is named after whether its parameter s matches
// pattern (a CEL string: a literal, or params.p).
func matching(t *testing.T, s *site, pattern string) stack.Definition {
	ids := builtinIDs(t, s)
	return stack.Definition{
		Parameters: json.RawMessage(`{"type":"object","required":["s"],"properties":{"s":{"type":"string"},"p":{"type":"string"}}}`),
		Slots: []stack.Slot{{Name: "net", Component: uuid.MustParse(ids["simcloud-network"]), Version: 1, Inputs: map[string]stack.Wiring{
			"name": {Kind: stack.Expression, Expr: `params.s.matches(` + pattern + `) ? "matched-net" : "other-net"`},
			"cidr": {Kind: stack.Literal, Value: "10.30.0.0/16"},
		}}},
		Machine: stack.Machine{States: []stack.State{{Name: "up", Initial: true}}},
	}
}

// A literal pattern too large is refused where it is written: the draft keeps it with a
// problem naming the input, publishing refuses it, and so does a route's filter.
func TestStack_ALiteralPatternTooLargeIsRefusedWhenTheStackIsSaved(t *testing.T) {
	s := newSite(t)
	admin := s.token(t, s.adminA)
	def := matching(t, s, `"`+issue30+`"`)
	def.Machine.States = append(def.Machine.States, stack.State{Name: "down"})
	def.Machine.Transitions = []stack.Transition{{From: "up", To: "down", Trigger: "poke"}}
	def.Routes = []stack.Route{{Type: "alert.firing", Filter: `event.subject.matches("` + issue30 + `")`, Trigger: "poke"}}
	r := s.call(t, "POST", "/api/v1/stacks", admin, map[string]any{"tenant_id": s.a.ID, "provider": "simcloud", "name": "greedy", "draft": def})
	wantStatus(t, r, http.StatusCreated)
	id := r.json(t)["id"].(string)
	for _, r := range []reply{r, s.call(t, "POST", "/api/v1/stacks/"+id+"/publish", admin, map[string]any{"changelog": "first"})} {
		got := problems(t, r)
		if len(got) != 2 || !hasProblem(got, "slots.net.inputs.name", "expression") || !hasProblem(got, "routes.0.filter", "expression") {
			t.Fatalf("%d: want slots.net.inputs.name and routes.0.filter (expression), got %+v", r.status, got)
		}
		for _, p := range got {
			if !strings.Contains(p.Message, `the regular expression "`+issue30+`" is too large: it compiles to 3003 steps, and a pattern may take at most 1000`) {
				t.Errorf("%s: %q does not say the pattern is too large", p.Field, p.Message)
			}
		}
	}
	wantStatus(t, s.call(t, "POST", "/api/v1/stacks/"+id+"/publish", admin, map[string]any{"changelog": "first"}), http.StatusUnprocessableEntity)
}

// A pattern the parameters give is held to the same bounds when the wiring runs, and so is the
// text it runs over: planning an instance with the issue's pattern over a 100 KB parameter is
// refused at once, naming the slot and the expression, rather than holding the request for
// seconds; an ordinary pattern over the same text is planned.
func TestStackInstance_AWiredPatternTooLargeIsRefusedWhenPlanned(t *testing.T) {
	s := newSite(t)
	admin := s.token(t, s.adminA)
	r := s.call(t, "POST", "/api/v1/stacks", admin, map[string]any{"tenant_id": s.a.ID, "provider": "simcloud", "name": "wired",
		"draft": matching(t, s, "params.p")})
	wantStatus(t, r, http.StatusCreated)
	stackID := r.json(t)["id"].(string)
	wantStatus(t, s.call(t, "POST", "/api/v1/stacks/"+stackID+"/publish", admin, map[string]any{"changelog": "first"}), http.StatusCreated)
	env, err := environment.NewService(s.pool).Create(t.Context(), s.adminA, s.a.ID, "dev")
	must(t, err)
	text := strings.Repeat("a", 100_000)
	user := s.token(t, s.userA)
	for _, c := range []struct {
		name, instance, pattern, want string
	}{
		{"the issue's pattern", "issue", issue30, `the regular expression "` + issue30 + `" is too large`},
		{"too much work", "work", "[a-z]{300}x", `matching "[a-z]{300}x" (303 steps) against 100000 bytes is too much work`},
		{"an ordinary pattern", "ordinary", "^a+$", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := s.call(t, "POST", "/api/v1/stack-instances", user, map[string]any{"stack_id": stackID, "environment_id": env.ID,
				"name": c.instance, "parameters": map[string]any{"s": text, "p": c.pattern}, "preview_only": true})
			if c.want == "" {
				wantStatus(t, r, http.StatusAccepted)
				return
			}
			wantStatus(t, r, http.StatusUnprocessableEntity)
			got := problems(t, r)
			if !hasProblem(got, "slots.net", "wiring") {
				t.Fatalf("want slots.net (wiring) among %+v", got)
			}
			if msg := got[0].Message; !strings.Contains(msg, "params.s.matches(params.p)") || !strings.Contains(msg, c.want) {
				t.Fatalf("%q does not name the expression and say %q", msg, c.want)
			}
		})
	}
}
