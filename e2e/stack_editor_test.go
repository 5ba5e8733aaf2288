package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"nimbus/app/domain/component"
	"nimbus/app/kernel/access"
	"nimbus/app/orchestration/environment"
)

// TestBrowser_StackEditorPublishForkAndParentMovesOn is a stack's whole story. A provider admin
// builds it in the editor — its parameters, a network and three machines wired to it, a state
// machine and a day-2 operation — sees an expression naming an unknown parameter refused
// beside its input, fixes it, renames a slot and publishes from the editor. A tenant user
// deploys it (the two web machines deploy at once), resizes it, and takes it to maintenance
// and back. A tenant admin forks it, adds a slot, publishes and deploys the fork. The provider
// publishes a second version with one more slot; the fork's page says its parent has moved
// on, and the first instance is upgraded to it; destroying it takes the slots down in reverse
// order.
func TestBrowser_StackEditorPublishForkAndParentMovesOn(t *testing.T) {
	t.Parallel()
	a := startApp(t)
	if _, err := component.EnsureBuiltins(context.Background(), component.NewService(a.pool, nil, nil)); err != nil {
		t.Fatal(err)
	}
	acme := a.createTenant(t, "acme")
	a.addMember(t, "ops@acme.example", acme.ID, access.TenantAdmin)
	a.addMember(t, "dev@acme.example", acme.ID, access.User)
	env, err := environment.NewService(a.pool).Create(context.Background(), a.principal(t, adminEmail), acme.ID, "dev")
	if err != nil {
		t.Fatal(err)
	}
	browser := newBrowser(t)

	admin := newSession(t, browser, a)
	admin.signIn(adminEmail, adminPassword)
	admin.open("/stacks")
	admin.follow(`[data-testid="new-stack"]`)
	admin.fill("#f-name", "web-tier")
	if status := admin.submit(`[data-testid="new-stack-form"]`); status != 200 {
		t.Fatalf("create the stack: status %d", status)
	}
	editPath := admin.path()
	if !strings.HasSuffix(editPath, "/edit") {
		t.Fatalf("after creating the stack the browser is on %s, want its editor", editPath)
	}
	stackPath := strings.TrimSuffix(editPath, "/edit")

	// The stack's parameters: a name prefix, required, and a number of cores.
	admin.pressIn(`[data-op="add-param"]`)
	admin.pressIn(`[data-op="add-param"]`)
	admin.setField("p.0.name", "prefix")
	admin.tick("p.0.required")
	admin.setField("p.1.name", "cores")
	admin.setField("p.1.type", "integer")
	admin.setField("p.1.default", "2")
	admin.pressIn(`[data-testid="parameters"] [data-testid="save"]`)
	if got := eval[[]string](admin, `[...document.querySelectorAll('[data-params="p"] tbody tr')].map(r => r.dataset.param)`); strings.Join(got, ",") != "prefix,cores" {
		t.Fatalf("parameters after saving: %q", got)
	}

	// A network named by an expression (naming a parameter that does not exist, at first) and
	// given its range as a value.
	admin.addSlot("net", "simcloud-network")
	admin.setField("s.0.in.name.kind", "expr")
	admin.setField("s.0.in.name.expr", "params.prefx + '-net'")
	admin.setField("s.0.in.cidr.kind", "literal")
	admin.setField("s.0.in.cidr.literal", "10.20.0.0/16")
	admin.pressIn(`[data-testid="slots"] [data-testid="save"]`)
	problem := admin.text(`[data-problem="slots.net.inputs.name"]`)
	admin.screenshot("stack-editor-inline-error")
	if !strings.Contains(problem, "params.prefx") {
		t.Fatalf("the problem beside the network's name says %q, want it to name params.prefx", problem)
	}
	if got := eval[string](admin, `document.querySelector('[name="s.0.in.name.expr"]').value`); got != "params.prefx + '-net'" {
		t.Fatalf("the expression typed is now %q, want it kept as typed", got)
	}
	admin.setField("s.0.in.name.expr", "params.prefix + '-net'")
	admin.pressIn(`[data-testid="slots"] [data-testid="save"]`)
	if n := eval[int](admin, `document.querySelectorAll('[data-problem^="slots.net"]').length`); n != 0 {
		t.Fatalf("the network still has %d problems: %q", n, admin.text(`[data-problem^="slots.net"]`))
	}

	// Two machines on the network's ID, and a third waiting for both.
	for i, name := range []string{"web1", "web2"} {
		admin.addSlot(name, "simcloud-machine")
		admin.setField(fmt.Sprintf("s.%d.in.network_id.kind", i+1), "output:net.network_id")
		admin.nameSlot(i+1, name)
		// Long enough that running together shows.
		admin.setField(fmt.Sprintf("s.%d.in.delay_ms.kind", i+1), "literal")
		admin.setField(fmt.Sprintf("s.%d.in.delay_ms.literal", i+1), "1500")
		admin.pressIn(`[data-testid="slots"] [data-testid="save"]`)
	}
	admin.addSlot("db", "simcloud-machine")
	admin.nameSlot(3, "db")
	admin.tick("s.3.dep", "web1")
	admin.tick("s.3.dep", "web2")
	admin.pressIn(`[data-testid="slots"] [data-testid="save"]`)
	if got := eval[[]string](admin, `[...document.querySelectorAll('[data-slot]')].map(s => s.dataset.slot)`); strings.Join(got, ",") != "net,web1,web2,db" {
		t.Fatalf("slots: %q", got)
	}
	if got := eval[[]string](admin, `[...document.querySelectorAll('[name="s.3.dep"]:checked')].map(c => c.value)`); strings.Join(got, ",") != "web1,web2" {
		t.Fatalf("db depends on %q", got)
	}

	// The state machine: active ⇄ maintenance → retired.
	for range 3 {
		admin.pressIn(`[data-op="add-state"]`)
	}
	admin.setField("m.s.0.name", "active")
	admin.setField("m.s.1.name", "maintenance")
	admin.setField("m.s.2.name", "retired")
	admin.tick("m.s.2.terminal")
	for range 3 {
		admin.pressIn(`[data-op="add-transition"]`)
	}
	for i, tr := range [][3]string{{"active", "maintenance", "maintenance"}, {"maintenance", "resume", "active"}, {"maintenance", "retire", "retired"}} {
		admin.setField(fmt.Sprintf("m.t.%d.from", i), tr[0])
		admin.setField(fmt.Sprintf("m.t.%d.trigger", i), tr[1])
		admin.setField(fmt.Sprintf("m.t.%d.to", i), tr[2])
	}
	admin.pressIn(`[data-testid="machine"] [data-testid="save"]`)
	if got := eval[[]string](admin, `[...document.querySelectorAll('[data-testid="machine-diagram"] li')].map(li => li.textContent.trim())`); strings.Join(got, "; ") != "active —maintenance→ maintenance; maintenance —resume→ active; maintenance —retire→ retired" {
		t.Fatalf("the machine's diagram shows %q", got)
	}

	// resize: offered in active, sets both machines' cores from its input.
	admin.pressIn(`[data-op="add-op"]`)
	admin.setField("o.0.name", "resize")
	admin.setField("o.0.display_name", "Resize")
	admin.tick("o.0.states", "active")
	admin.pressIn(`[data-op="add-op-param:0"]`)
	admin.setField("o.0.p.0.name", "cores")
	admin.setField("o.0.p.0.type", "integer")
	admin.tick("o.0.p.0.required")
	admin.pressIn(`[data-op="add-op-action:0"]`)
	admin.pressIn(`[data-op="add-op-action:0"]`)
	admin.setField("o.0.a.0.slot", "web1")
	admin.setField("o.0.a.1.slot", "web2")
	admin.pressIn(`[data-testid="operations"] [data-testid="save"]`)
	admin.setField("o.0.a.0.in.cores", "inputs.cores")
	admin.setField("o.0.a.1.in.cores", "inputs.cores")
	admin.pressIn(`[data-testid="operations"] [data-testid="save"]`)
	if eval[int](admin, `document.querySelectorAll('[data-testid="no-problems"]').length`) != 1 {
		t.Fatalf("the finished draft has problems: %q", admin.text(`[data-testid="problems"]`))
	}
	admin.screenshot("stack-editor")

	// A slot's program is shown read-only in the code editor once its panel is opened.
	if eval[int](admin, `document.querySelectorAll('.monaco-editor').length`) != 0 {
		t.Fatal("programs are shown before their panels are opened")
	}
	eval[bool](admin, `document.querySelector('[data-slot="web1"] details[data-program]').open = true`)
	admin.waitWithin(`!!document.querySelector('[data-slot="web1"] [data-program] .monaco-editor')`, 30*time.Second)
	if !eval[bool](admin, `window.monaco.editor.getEditors()[0].getOption(window.monaco.editor.EditorOption.readOnly)`) {
		t.Fatal("the program's editor is not read-only")
	}

	// Renaming the network takes the machines' wiring to it along.
	admin.setField("s.0.name", "network")
	admin.pressIn(`[data-testid="slots"] [data-testid="save"]`)
	if got := eval[string](admin, `document.querySelector('[name="s.1.in.network_id.kind"]').value`); got != "output:network.network_id" {
		t.Fatalf("after renaming the network, web1's network_id comes from %q", got)
	}

	// Published from the editor: refused without a changelog, then published.
	admin.pressIn(`[data-testid="publish"]`)
	if got := admin.text(`[data-testid="refused"]`); !strings.Contains(got, "not published") {
		t.Fatalf("a publish without a changelog says %q", got)
	}
	admin.setField("changelog", "first version")
	admin.pressIn(`[data-testid="publish"]`)
	if got := admin.text(`[data-testid="published"]`); !strings.Contains(got, "Published v1") {
		t.Fatalf("the editor says %q after publishing", got)
	}

	// A tenant user deploys it through the wizard; the two web machines deploy at once.
	dev := newSession(t, browser, a)
	dev.signIn("dev@acme.example", userPassword)
	shopPath := dev.deployStack(stackPath, "shop", env.ID.String())
	var together bool
	if err := a.pool.QueryRow(context.Background(), `SELECT a.started_at < b.finished_at AND b.started_at < a.finished_at
		FROM operations a JOIN deployed_components da ON da.id = a.deployment_id,
		     operations b JOIN deployed_components db ON db.id = b.deployment_id
		WHERE da.name = 'shop-web1' AND db.name = 'shop-web2' AND a.kind = 'deploy' AND b.kind = 'deploy'`).Scan(&together); err != nil {
		t.Fatal(err)
	}
	if !together {
		t.Fatal("the two web machines did not deploy at once")
	}

	// resize, from the instance's page, gives both web machines the cores asked for.
	dev.fill(`[name="resize.p.cores"]`, "4")
	dev.submit(`[data-operation="resize"] form`)
	dev.waitRun(a, shopPath, "day2")
	for _, name := range []string{"shop-web1", "shop-web2"} {
		if got := machineNamed(t, a, name)["cores"]; got != 4.0 {
			t.Fatalf("%s has %v cores after resize to 4", name, got)
		}
	}

	// Maintenance and back: each trigger moves the state the page shows.
	for _, move := range [][2]string{{"maintenance", "maintenance"}, {"resume", "active"}} {
		dev.submit(fmt.Sprintf(`[data-trigger=%q] form`, move[0]))
		dev.waitRun(a, shopPath, "transition")
		dev.open(shopPath)
		if got := dev.text(`[data-testid="instance-state"]`); got != move[1] {
			t.Fatalf("after %s the page shows state %q, want %s", move[0], got, move[1])
		}
	}
	if history := dev.rows("state-history"); len(history) != 3 {
		t.Fatalf("the states after maintenance and back: %q", history)
	}
	dev.screenshot("stack-instance-after-maintenance")

	// A tenant admin forks it from the catalog, adds a slot and publishes the fork.
	ops := newSession(t, browser, a)
	ops.signIn("ops@acme.example", userPassword)
	ops.open("/stacks")
	ops.click(`[data-fork="web-tier"]`)
	ops.screenshot("stacks-catalog-fork")
	ops.fill(`[data-stack="web-tier"] [data-testid="fork-form"] input[name="name"]`, "acme-web")
	if status := ops.submit(`[data-stack="web-tier"] [data-testid="fork-form"]`); status != 200 {
		t.Fatalf("fork: status %d", status)
	}
	forkPath := ops.path()
	if forkPath == stackPath || !strings.HasPrefix(forkPath, "/stacks/") {
		t.Fatalf("after forking the browser is on %s, want the fork's page", forkPath)
	}
	if got := ops.text(`[data-testid="scope"]`); got != "tenant acme" {
		t.Fatalf("the fork's scope reads %q", got)
	}
	ops.open(forkPath + "/edit")
	ops.addSlot("cache", "simcloud-machine")
	ops.nameSlot(4, "cache")
	ops.pressIn(`[data-testid="slots"] [data-testid="save"]`)
	if eval[int](ops, `document.querySelectorAll('[data-testid="no-problems"]').length`) != 1 {
		t.Fatalf("the fork's draft has problems: %q", ops.text(`[data-testid="problems"]`))
	}
	ops.publishStack(forkPath, "with a cache")
	ops.deployStack(forkPath, "cached", env.ID.String())
	if n := eval[int](ops, `document.querySelectorAll('[data-testid="slots"] tr[data-status="deployed"]').length`); n != 5 {
		t.Fatalf("the fork's instance has %d slots deployed, want 5", n)
	}
	ops.open(forkPath)
	if n := eval[int](ops, `document.querySelectorAll('[data-testid="parent-newer"]').length`); n != 0 {
		t.Fatal("the fork says its parent has newer versions before the parent changed")
	}

	// The provider publishes v2 with one more slot; the fork's page says so, and compares.
	admin.open(editPath)
	admin.addSlot("web3", "simcloud-machine")
	admin.nameSlot(4, "web3")
	admin.pressIn(`[data-testid="slots"] [data-testid="save"]`)
	admin.publishStack(stackPath, "a third web machine")
	if got := admin.text(`[data-testid="latest"]`); got != "v2" {
		t.Fatalf("the stack's latest version reads %q, want v2", got)
	}
	admin.screenshot("stack-page")
	ops.open(forkPath)
	if got := ops.text(`[data-testid="parent-newer"]`); !strings.Contains(got, "v2") {
		t.Fatalf("the fork's notice reads %q, want it to name the parent's v2", got)
	}
	ops.screenshot("stack-fork-parent-newer")
	ops.follow(`[data-testid="parent-diff"]`)
	if got := ops.text(`[data-testid="slots-added"]`); got != "cache" {
		t.Fatalf("the diff against the parent's v2 adds %q, want the fork's cache", got)
	}
	ops.screenshot("stack-diff-against-parent")

	// The first instance is upgraded to v2 from its page: the new slot is deployed.
	ops.open(shopPath)
	if got := eval[string](ops, `document.querySelector('[data-testid="upgrade-plan"] [data-slot="web3"]')?.dataset.change ?? ""`); got != "added" {
		t.Fatalf("the upgrade plan says web3 is %q", got)
	}
	ops.submit(`#upgrade form`)
	ops.waitRun(a, shopPath, "upgrade")
	ops.open(shopPath)
	if n := eval[int](ops, `document.querySelectorAll('[data-testid="slots"] tr[data-status="deployed"]').length`); n != 5 {
		t.Fatalf("after the upgrade %d slots are deployed, want 5", n)
	}

	// Destroying it takes db down before the web machines, and those before their network.
	ops.fill(`[data-testid="destroy-form"] input[name="confirm"]`, "shop")
	ops.submit(`[data-testid="destroy-form"]`)
	ops.across(`document.querySelector('[data-testid="instance-status"]')?.dataset.status === 'destroyed'`, engineWait)
	var inOrder bool
	if err := a.pool.QueryRow(context.Background(), `WITH d AS (
		SELECT dc.name, o.started_at, o.finished_at FROM operations o JOIN deployed_components dc ON dc.id = o.deployment_id
		WHERE o.kind = 'destroy' AND dc.name LIKE 'shop-%')
		SELECT (SELECT finished_at FROM d WHERE name = 'shop-db') < ALL (SELECT started_at FROM d WHERE name IN ('shop-web1', 'shop-web2'))
		   AND (SELECT max(finished_at) FROM d WHERE name IN ('shop-web1', 'shop-web2')) < (SELECT started_at FROM d WHERE name = 'shop-network')`).Scan(&inOrder); err != nil {
		t.Fatal(err)
	}
	if !inOrder {
		t.Fatal("destroy did not take the slots down in reverse order")
	}
}

// nameSlot names the machines of the slot at index i by the stack's prefix and the slot.
func (s *session) nameSlot(i int, slot string) {
	s.t.Helper()
	s.setField(fmt.Sprintf("s.%d.in.name.kind", i), "expr")
	s.setField(fmt.Sprintf("s.%d.in.name.expr", i), "params.prefix + '-"+slot+"'")
}

// deployStack deploys the stack through its wizard into the environment under name (its
// prefix too), waits on the instance's page until it is active and returns the page's path.
func (s *session) deployStack(stackPath, name, envID string) string {
	s.t.Helper()
	s.open(stackPath + "/deploy")
	s.choose(`[name="environment_id"]`, envID)
	s.fill("#f-name", name)
	s.fill(`#f-p\.prefix`, name)
	if status := s.submit(`[data-testid="wizard-form"]`); status != 200 {
		s.t.Fatalf("the plan of %s answered %d: %s", name, status, s.text("main"))
	}
	s.submitButton(`[data-testid="deploy"]`)
	s.waitWithin(`['active', 'failed'].includes(document.querySelector('[data-testid="instance-status"]')?.dataset.status)`, engineWait)
	if got := s.text(`[data-testid="instance-status"]`); got != "active" {
		s.t.Fatalf("%s ended %s: %s", name, got, s.text(`#instance-live`))
	}
	return s.path()
}

// waitRun waits until the instance's newest run of kind has ended, and fails unless it
// succeeded.
func (s *session) waitRun(a *app, instancePath, kind string) {
	s.t.Helper()
	id := strings.TrimPrefix(instancePath, "/stack-instances/")
	var status, reason string
	if !pollUntil(engineWait, func() bool {
		err := a.pool.QueryRow(context.Background(), `SELECT status, error FROM stack_runs WHERE instance_id = $1 AND kind = $2
			ORDER BY created_at DESC LIMIT 1`, id, kind).Scan(&status, &reason)
		return err == nil && status != "queued" && status != "running"
	}) {
		s.t.Fatalf("the %s run of %s did not end", kind, instancePath)
	}
	if status != "succeeded" {
		s.t.Fatalf("the %s run of %s %s: %s", kind, instancePath, status, reason)
	}
}

// machineNamed reads the simulated cloud's machine of that name.
func machineNamed(t *testing.T, a *app, name string) map[string]any {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(a.cloud, "machine", "*.json"))
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		if m["name"] == name {
			return m
		}
	}
	t.Fatalf("no machine named %s in the cloud", name)
	return nil
}

// pressIn clicks a button of the stack editor and waits for the editor the server answers with
// to replace the page's.
func (s *session) pressIn(sel string) {
	s.t.Helper()
	// Clicked from the page's script: the editor is long, and the button may sit under the
	// top bar where a click at its place would land.
	if !eval[bool](s, fmt.Sprintf(`(() => {
		const b = document.querySelector(%q);
		if (!b) return false;
		document.getElementById("stack-editor").dataset.stale = "yes";
		b.click();
		return true;
	})()`, sel)) {
		s.t.Fatalf("no button %s in the editor", sel)
	}
	s.waitWithin(`!!document.getElementById("stack-editor") && !document.getElementById("stack-editor").dataset.stale && !document.querySelector(".htmx-request")`, 30*time.Second)
}

// setField gives the editor's field named name a value, as choosing or typing would.
func (s *session) setField(name, value string) {
	s.t.Helper()
	ok := eval[bool](s, fmt.Sprintf(`(() => {
		const el = document.querySelector('[name=%q]');
		if (!el) return false;
		el.value = %q;
		el.dispatchEvent(new Event("change", {bubbles: true}));
		return el.value === %q;
	})()`, name, value, value))
	if !ok {
		s.t.Fatalf("no field %s that takes %q on %s", name, value, s.path())
	}
}

// tick ticks the checkbox named name, of the value given when several share the name.
func (s *session) tick(name string, value ...string) {
	s.t.Helper()
	sel := fmt.Sprintf(`[name=%q]`, name)
	for _, v := range value {
		sel += fmt.Sprintf(`[value=%q]`, v)
	}
	if !eval[bool](s, fmt.Sprintf(`(() => { const el = document.querySelector(%q); if (el) el.checked = true; return !!el; })()`, sel)) {
		s.t.Fatalf("no checkbox %s on %s", sel, s.path())
	}
}

// addSlot adds a slot of the latest version of the named component.
func (s *session) addSlot(name, comp string) {
	s.t.Helper()
	s.setField("new_slot.name", name)
	value := eval[string](s, fmt.Sprintf(`[...document.querySelector('[name="new_slot.component"]').options].find(o => o.label.startsWith(%q + " "))?.value ?? ""`, comp))
	if value == "" {
		s.t.Fatalf("the editor offers no version of %s", comp)
	}
	s.setField("new_slot.component", value)
	s.pressIn(`[data-op="add-slot"]`)
	s.waitFor(fmt.Sprintf(`!!document.querySelector('[data-slot=%q]')`, name))
}

// publishStack publishes the stack's draft from its page and checks that it worked.
func (s *session) publishStack(stackPath, changelog string) {
	s.t.Helper()
	s.open(stackPath)
	s.fill("#f-changelog", changelog)
	if status := s.submit(`[data-testid="publish-form"]`); status != 200 {
		s.t.Fatalf("publish: status %d", status)
	}
	if got := s.text(`[data-testid="versions"] tbody tr`); !strings.Contains(got, changelog) {
		s.t.Fatalf("the newest version reads %q, want the changelog %q", got, changelog)
	}
}
