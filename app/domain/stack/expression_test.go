package stack_test

import (
	"net/http"
	"strings"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/domain/stack"
)

// A literal pattern too large is refused where it is written: the draft keeps it with a
// problem naming the input, publishing refuses it, and so does a route's filter.
func TestStack_ALiteralPatternTooLargeIsRefusedWhenTheStackIsSaved(t *testing.T) {
	s := apptest.NewSite(t)
	admin := s.Token(t, s.AdminA)
	def := apptest.Matching(t, s, `"`+apptest.Issue30+`"`)
	def.Machine.States = append(def.Machine.States, stack.State{Name: "down"})
	def.Machine.Transitions = []stack.Transition{{From: "up", To: "down", Trigger: "poke"}}
	def.Routes = []stack.Route{{Type: "alert.firing", Filter: `event.subject.matches("` + apptest.Issue30 + `")`, Trigger: "poke"}}
	r := s.Call(t, "POST", "/api/v1/stacks", admin, map[string]any{"tenant_id": s.A.ID, "provider": "simcloud", "name": "greedy", "draft": def})
	apptest.WantStatus(t, r, http.StatusCreated)
	id := r.JSON(t)["id"].(string)
	for _, r := range []apptest.Reply{r, s.Call(t, "POST", "/api/v1/stacks/"+id+"/publish", admin, map[string]any{"changelog": "first"})} {
		got := apptest.Problems(t, r)
		if len(got) != 2 || !apptest.HasProblem(got, "slots.net.inputs.name", "expression") || !apptest.HasProblem(got, "routes.0.filter", "expression") {
			t.Fatalf("%d: want slots.net.inputs.name and routes.0.filter (expression), got %+v", r.Status, got)
		}
		for _, p := range got {
			if !strings.Contains(p.Message, `the regular expression "`+apptest.Issue30+`" is too large: it compiles to 3003 steps, and a pattern may take at most 1000`) {
				t.Errorf("%s: %q does not say the pattern is too large", p.Field, p.Message)
			}
		}
	}
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/stacks/"+id+"/publish", admin, map[string]any{"changelog": "first"}), http.StatusUnprocessableEntity)
}
