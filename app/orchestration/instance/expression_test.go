package instance_test

import (
	"net/http"
	"strings"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/orchestration/environment"
)

// A pattern the parameters give is held to the same bounds when the wiring runs, and so is the
// text it runs over: planning an instance with the issue's pattern over a 100 KB parameter is
// refused at once, naming the slot and the expression, rather than holding the request for
// seconds; an ordinary pattern over the same text is planned.
func TestStackInstance_AWiredPatternTooLargeIsRefusedWhenPlanned(t *testing.T) {
	s := apptest.NewSite(t)
	admin := s.Token(t, s.AdminA)
	r := s.Call(t, "POST", "/api/v1/stacks", admin, map[string]any{"tenant_id": s.A.ID, "provider": "simcloud", "name": "wired",
		"draft": apptest.Matching(t, s, "params.p")})
	apptest.WantStatus(t, r, http.StatusCreated)
	stackID := r.JSON(t)["id"].(string)
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/stacks/"+stackID+"/publish", admin, map[string]any{"changelog": "first"}), http.StatusCreated)
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	text := strings.Repeat("a", 100_000)
	user := s.Token(t, s.UserA)
	for _, c := range []struct {
		name, instance, pattern, want string
	}{
		{"the issue's pattern", "issue", apptest.Issue30, `the regular expression "` + apptest.Issue30 + `" is too large`},
		{"too much work", "work", "[a-z]{300}x", `matching "[a-z]{300}x" (303 steps) against 100000 bytes is too much work`},
		{"an ordinary pattern", "ordinary", "^a+$", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := s.Call(t, "POST", "/api/v1/stack-instances", user, map[string]any{"stack_id": stackID, "environment_id": env.ID,
				"name": c.instance, "parameters": map[string]any{"s": text, "p": c.pattern}, "preview_only": true})
			if c.want == "" {
				apptest.WantStatus(t, r, http.StatusAccepted)
				return
			}
			apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
			got := apptest.Problems(t, r)
			if !apptest.HasProblem(got, "slots.net", "wiring") {
				t.Fatalf("want slots.net (wiring) among %+v", got)
			}
			if msg := got[0].Message; !strings.Contains(msg, "params.s.matches(params.p)") || !strings.Contains(msg, c.want) {
				t.Fatalf("%q does not name the expression and say %q", msg, c.want)
			}
		})
	}
}
