package server_test

import (
	"net/http"
	"strings"
	"testing"

	"nimbus/app/environment"
)

// The plan's page shows what the wiring gave when the plan was made, and evaluates nothing: with
// the version's expressions changed under it (as nothing in Nimbus changes them), a view still
// shows what the plan worked out. A plan made before that was kept says so, with no values.
func TestStackPages_PlanShowsWhatItsWiringGaveWithoutEvaluatingItAgain(t *testing.T) {
	s := newSite(t)
	stackID := publishedStack(t, s, "netvm", netAndMachine(t, s))
	env, err := environment.NewService(s.pool).Create(t.Context(), s.adminA, s.a.ID, "dev")
	must(t, err)
	user := s.token(t, s.userA)
	r := s.call(t, "POST", "/api/v1/stack-instances", user, map[string]any{"stack_id": stackID, "environment_id": env.ID,
		"name": "shop", "parameters": map[string]any{"prefix": "shop"}, "preview_only": true})
	wantStatus(t, r, http.StatusAccepted)
	plan := "/stack-instances/" + r.json(t)["id"].(string) + "/plan"

	r = s.call(t, "GET", plan, user, nil)
	wantStatus(t, r, http.StatusOK)
	wantIn(t, r, `data-slot="net" data-input="name" data-kind="expression"`, "= shop-net", `data-slot="vm" data-input="name" data-kind="expression"`, "= shop-vm")

	_, err = s.pool.Exec(t.Context(), `UPDATE stack_versions SET definition = replace(definition::text, '-net\"', '-changed\"')::jsonb WHERE stack_id = $1`, stackID)
	must(t, err)
	_, err = s.pool.Exec(t.Context(), `UPDATE stack_versions SET definition = replace(definition::text, '-vm\"', '-changed\"')::jsonb WHERE stack_id = $1`, stackID)
	must(t, err)
	r = s.call(t, "GET", plan, user, nil)
	wantStatus(t, r, http.StatusOK)
	wantIn(t, r, `params.prefix + &#34;-changed&#34; = shop-net`, `params.prefix + &#34;-changed&#34; = shop-vm`)
	if strings.Contains(string(r.body), "shop-changed") || strings.Contains(string(r.body), `data-testid="wiring-not-kept"`) {
		t.Fatalf("a view of the plan evaluated its wiring again:\n%s", r.body)
	}

	_, err = s.pool.Exec(t.Context(), `DELETE FROM stack_instance_wiring`)
	must(t, err)
	r = s.call(t, "GET", plan, user, nil)
	wantStatus(t, r, http.StatusOK)
	wantIn(t, r, `data-testid="wiring-not-kept"`, `params.prefix + &#34;-changed&#34;</td>`)
	if strings.Contains(string(r.body), "= shop-") {
		t.Fatalf("a plan without its wiring kept shows values:\n%s", r.body)
	}
}
