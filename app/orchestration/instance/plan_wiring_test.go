package instance_test

import (
	"net/http"
	"strings"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/orchestration/environment"
)

// The plan's page shows what the wiring gave when the plan was made, and evaluates nothing: with
// the version's expressions changed under it (as nothing in Nimbus changes them), a view still
// shows what the plan worked out. A plan made before that was kept says so, with no values.
func TestStackPages_PlanShowsWhatItsWiringGaveWithoutEvaluatingItAgain(t *testing.T) {
	s := apptest.NewSite(t)
	stackID := apptest.PublishedStack(t, s, "netvm", netAndMachine(t, s))
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	user := s.Token(t, s.UserA)
	r := s.Call(t, "POST", "/api/v1/stack-instances", user, map[string]any{"stack_id": stackID, "environment_id": env.ID,
		"name": "shop", "parameters": map[string]any{"prefix": "shop"}, "preview_only": true})
	apptest.WantStatus(t, r, http.StatusAccepted)
	plan := "/stack-instances/" + r.JSON(t)["id"].(string) + "/plan"

	r = s.Call(t, "GET", plan, user, nil)
	apptest.WantStatus(t, r, http.StatusOK)
	apptest.WantIn(t, r, `data-slot="net" data-input="name" data-kind="expression"`, "= shop-net", `data-slot="vm" data-input="name" data-kind="expression"`, "= shop-vm")

	_, err = s.Pool.Exec(t.Context(), `UPDATE stack_versions SET definition = replace(definition::text, '-net\"', '-changed\"')::jsonb WHERE stack_id = $1`, stackID)
	apptest.Must(t, err)
	_, err = s.Pool.Exec(t.Context(), `UPDATE stack_versions SET definition = replace(definition::text, '-vm\"', '-changed\"')::jsonb WHERE stack_id = $1`, stackID)
	apptest.Must(t, err)
	r = s.Call(t, "GET", plan, user, nil)
	apptest.WantStatus(t, r, http.StatusOK)
	apptest.WantIn(t, r, `params.prefix + &#34;-changed&#34; = shop-net`, `params.prefix + &#34;-changed&#34; = shop-vm`)
	if strings.Contains(string(r.Body), "shop-changed") || strings.Contains(string(r.Body), `data-testid="wiring-not-kept"`) {
		t.Fatalf("a view of the plan evaluated its wiring again:\n%s", r.Body)
	}

	_, err = s.Pool.Exec(t.Context(), `DELETE FROM stack_instance_wiring`)
	apptest.Must(t, err)
	r = s.Call(t, "GET", plan, user, nil)
	apptest.WantStatus(t, r, http.StatusOK)
	apptest.WantIn(t, r, `data-testid="wiring-not-kept"`, `params.prefix + &#34;-changed&#34;</td>`)
	if strings.Contains(string(r.Body), "= shop-") {
		t.Fatalf("a plan without its wiring kept shows values:\n%s", r.Body)
	}
}
