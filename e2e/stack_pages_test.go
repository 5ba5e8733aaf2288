package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/domain/component"
	"nimbus/app/domain/stack"
	"nimbus/app/kernel/access"
	"nimbus/app/orchestration/environment"
	"nimbus/app/platform/pulumix"
)

// webStack records a provider stack, published straight in the database: a network, two
// machines on it that deploy at once, and a third after both, with a lifecycle
// active ⇄ maintenance → retired.
func webStack(t *testing.T, a *app) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	ids := map[string]uuid.UUID{}
	rows, err := a.pool.Query(ctx, `SELECT name, id FROM components WHERE name IN ('simcloud-network', 'simcloud-machine')`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		var id uuid.UUID
		if err := rows.Scan(&name, &id); err != nil {
			t.Fatal(err)
		}
		ids[name] = id
	}
	rows.Close()
	onNet := func(name string) stack.Slot {
		return stack.Slot{Name: name, Component: ids["simcloud-machine"], Version: 1, Inputs: map[string]stack.Wiring{
			"name":       {Kind: stack.Expression, Expr: `params.prefix + "-` + name + `"`},
			"network_id": {Kind: stack.Output, Slot: "net", Output: "network_id"},
			"delay_ms":   {Kind: stack.Literal, Value: 800},
			"cores":      {Kind: stack.Param, Param: "cores"},
		}}
	}
	c := onNet("c")
	c.Inputs["network_id"] = stack.Wiring{Kind: stack.Literal, Value: ""}
	c.DependsOn = []string{"a", "b"}
	def := stack.Definition{
		Parameters: json.RawMessage(`{"type":"object","required":["prefix"],"properties":{"prefix":{"type":"string","pattern":"^[a-z][a-z0-9-]*$"},"cores":{"type":"integer","default":2}}}`),
		Slots: []stack.Slot{{Name: "net", Component: ids["simcloud-network"], Version: 1, Inputs: map[string]stack.Wiring{
			"name": {Kind: stack.Expression, Expr: `params.prefix + "-net"`},
			"cidr": {Kind: stack.Literal, Value: "10.20.0.0/16"},
		}}, onNet("a"), onNet("b"), c},
		Machine: stack.Machine{
			States: []stack.State{{Name: "active", Initial: true}, {Name: "maintenance"}, {Name: "retired", Terminal: true}},
			Transitions: []stack.Transition{
				{From: "active", To: "maintenance", Trigger: "maintain"},
				{From: "maintenance", To: "active", Trigger: "resume"},
				{From: "active", To: "retired", Trigger: "retire"},
			},
		},
	}
	raw, _ := json.Marshal(def)
	var id uuid.UUID
	if err := a.pool.QueryRow(ctx, `INSERT INTO stacks (provider_id, name, display_name)
		SELECT id, 'web', 'Web shop' FROM semantic_providers WHERE name = 'simcloud' RETURNING id`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if _, err := a.pool.Exec(ctx, `INSERT INTO stack_versions (stack_id, version, definition, changelog) VALUES ($1, 1, $2, 'first')`, id, raw); err != nil {
		t.Fatal(err)
	}
	if _, err := a.pool.Exec(ctx, `INSERT INTO stack_day2_operations (stack_id, version, name, input_schema, required_states, actions, position)
		VALUES ($1, 1, 'refresh_all', '{"type":"object","properties":{}}', '{active}', '[{"slot":"net","do":"refresh"}]', 0)`, id); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestBrowser_DeployStackThroughTheWizardWatchItAndDestroyIt deploys a stack as a tenant admin
// does in the browser: the wizard's form refuses a bad parameter beside its field, the plan
// shows the slots' parallel groups and wiring, and the instance's page follows the deploy
// without reloading until every slot is deployed and the state machine stands at active;
// then the instance is destroyed from its page.
func TestBrowser_DeployStackThroughTheWizardWatchItAndDestroyIt(t *testing.T) {
	t.Parallel()
	a := startApp(t)
	ctx := context.Background()
	if _, err := component.EnsureBuiltins(ctx, component.NewService(a.pool, pulumix.Local{Dir: a.pulumiDir}, a.jobs)); err != nil {
		t.Fatal(err)
	}
	acme := a.createTenant(t, "acme")
	a.addMember(t, "ops@acme.test", acme.ID, access.TenantAdmin)
	env, err := environment.NewService(a.pool).Create(ctx, a.principal(t, adminEmail), acme.ID, "dev")
	if err != nil {
		t.Fatal(err)
	}
	stackID := webStack(t, a)

	s := newSession(t, newBrowser(t), a)
	s.signIn("ops@acme.test", userPassword)

	// The instances' list offers the stack; its wizard's form is the stack's parameters, and a
	// bad one comes back beside its field.
	s.open("/stack-instances")
	if got := s.text(`[data-testid="deployable-stacks"] a`); got != "Web shop" {
		t.Fatalf("the list offers %q to deploy", got)
	}
	s.submitButton(`[data-testid="deployable-stacks"] a`)
	if s.path() != "/stacks/"+stackID.String()+"/deploy" {
		t.Fatalf("the offer leads to %s", s.path())
	}
	if got := eval[string](s, `document.getElementById('f-p.cores').value`); got != "2" {
		t.Errorf("the cores field holds %q, want its default 2", got)
	}
	s.fill("#f-name", "shop")
	s.fill(`#f-p\.prefix`, "Shop")
	if status := s.submit(`[data-testid="wizard-form"]`); status != 422 {
		t.Fatalf("a bad prefix answered %d", status)
	}
	if msg := s.fieldError("p.prefix"); !strings.Contains(msg, "pattern") {
		t.Fatalf("the prefix's error says %q, want it to name the pattern", msg)
	}
	s.retype(`#f-p\.prefix`, "shop")
	if status := s.submit(`[data-testid="wizard-form"]`); status != 200 {
		t.Fatalf("the plan answered %d: %s", status, s.text("main"))
	}

	// The plan: net first, then a and b at once, then c; each input's source in words.
	if got := column(s.rows("wiring"), 0); len(got) != 14 {
		t.Errorf("the wiring lists %d inputs, want 14: %q", len(got), got)
	}
	groups := eval[[]string](s, `[...document.querySelectorAll('[data-testid="groups"] li')].map(li => li.textContent.trim())`)
	if strings.Join(groups, " | ") != "net | a, b | c" {
		t.Errorf("the parallel groups are %q", groups)
	}
	if n := eval[int](s, `document.querySelectorAll('#plan-graph .diagram-arrow').length`); n != 4 {
		t.Errorf("the plan draws %d arrows, want net→a, net→b, a→c, b→c", n)
	}
	if got := s.text(`[data-slot="a"][data-input="cores"] td:last-child`); got != "cores = 2" || s.text(`[data-slot="a"][data-input="cores"] td:nth-child(3)`) != "parameter" {
		t.Errorf("a's cores come from %q, want the parameter cores = 2", got)
	}
	if got := s.text(`[data-slot="net"][data-input="name"] td:last-child`); got != `params.prefix + "-net" = shop-net` {
		t.Errorf("net's name comes from %q, want the expression with its value", got)
	}
	s.screenshot("stack-plan")
	s.submitButton(`[data-testid="deploy"]`)
	if !strings.HasPrefix(s.path(), "/stack-instances/") {
		t.Fatalf("deploy led to %s", s.path())
	}

	// The page follows the deploy without reloading, and stops once the instance is active.
	eval[bool](s, `(window.sameLoad = true)`)
	s.waitWithin(`['active', 'failed'].includes(document.querySelector('[data-testid="instance-status"]')?.dataset.status)`, engineWait)
	if got := s.text(`[data-testid="instance-status"]`); got != "active" {
		t.Fatalf("the instance ended %s: %s", got, s.text(`#instance-live`))
	}
	s.waitFor(`document.getElementById('instance-live')?.dataset.live === 'idle'`)
	if !eval[bool](s, `window.sameLoad === true`) {
		t.Fatal("the instance page reloaded instead of following the deploy")
	}
	s.screenshot("stack-instance")
	eval[bool](s, `(document.documentElement.dataset.theme = 'dark', true)`)
	if fill := eval[string](s, `getComputedStyle(document.querySelector('#state-diagram [data-current] rect')).fill`); fill == eval[string](s, `getComputedStyle(document.querySelector('#state-diagram [data-name="retired"] rect')).fill`) {
		t.Errorf("in the dark theme the current state is drawn as the others (%s)", fill)
	}
	s.screenshot("stack-instance-dark")
	eval[bool](s, `(delete document.documentElement.dataset.theme, true)`)
	slots := eval[map[string]string](s, `Object.fromEntries([...document.querySelectorAll('[data-testid="slots"] tr[data-slot]')].map(r => [r.dataset.slot, r.dataset.status]))`)
	if len(slots) != 4 {
		t.Fatalf("slots: %v", slots)
	}
	for name, status := range slots {
		if status != "deployed" {
			t.Errorf("slot %s is %s", name, status)
		}
	}
	if n := eval[int](s, `document.querySelectorAll('#slot-graph a[href^="/deployments/"] .slot-ok').length`); n != 4 {
		t.Errorf("the slot graph links %d deployed slots to their deployments, want 4", n)
	}
	if got := eval[[]string](s, `[...document.querySelectorAll('#state-diagram [data-current]')].map(g => g.dataset.name)`); len(got) != 1 || got[0] != "active" {
		t.Errorf("the state diagram marks %v, want active", got)
	}
	if got := s.text(`[data-testid="outputs-net"] [data-key="network_id"]`); !strings.HasPrefix(got, "n-") {
		t.Errorf("net's network_id output shows %q", got)
	}
	triggers := eval[[]string](s, `[...document.querySelectorAll('[data-testid="triggers"] [data-trigger]')].map(li => li.dataset.trigger)`)
	if strings.Join(triggers, ",") != "maintain,retire" {
		t.Errorf("active offers the triggers %v, want maintain and retire", triggers)
	}
	if s.text(`[data-operation="refresh_all"]`) == "" {
		t.Error("the day-2 operation allowed in active is not offered")
	}
	if history := s.rows("state-history"); len(history) != 1 || history[0][1] != "active" || history[0][2] != "deployed" {
		t.Errorf("the states: %q", history)
	}
	if runs := s.rows("runs"); len(runs) != 1 || !strings.Contains(runs[0][1], "succeeded") {
		t.Errorf("the runs: %q", runs)
	}

	// The list and the environment's page show it; a wrong name does not destroy it; its name does.
	instancePath := s.path()
	s.open("/stack-instances")
	if got := rowWith(s.rows("stack-instances"), "shop"); len(got) < 5 || got[3] != "active" {
		t.Errorf("the list shows %q", got)
	}
	s.open("/environments/" + env.ID.String())
	s.waitFor(`document.querySelector('#stack-instances [data-instance="shop"] a')?.getAttribute('href') === ` + jsString(instancePath))
	s.open(instancePath)
	s.fill(`[data-testid="destroy-form"] input[name="confirm"]`, "shoe")
	if status := s.submit(`[data-testid="destroy-form"]`); status != 422 {
		t.Fatalf("destroying with the wrong name answered %d", status)
	}
	if msg := s.fieldError("confirm"); !strings.Contains(msg, "Type shop") {
		t.Errorf("the wrong name says %q", msg)
	}
	s.fill(`[data-testid="destroy-form"] input[name="confirm"]`, "shop")
	s.submit(`[data-testid="destroy-form"]`)
	s.across(`document.querySelector('[data-testid="instance-status"]')?.dataset.status === 'destroyed'`, engineWait)
	if files := cloudFiles(t, a); len(files) != 0 {
		t.Fatalf("left in the cloud after destroy: %v", files)
	}
}
