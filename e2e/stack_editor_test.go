package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"nimbus/app/access"
	"nimbus/app/component"
)

// TestBrowser_StackEditorPublishForkAndParentMovesOn builds a stack in the editor — its
// parameters, a network and three machines wired to it, a state machine and a day-2
// operation — sees an expression naming an unknown parameter refused beside its input, fixes
// it and publishes; a tenant admin forks it, adds a slot and publishes the fork; the provider
// publishes a second version, and the fork's page says its parent has moved on.
func TestBrowser_StackEditorPublishForkAndParentMovesOn(t *testing.T) {
	t.Parallel()
	a := startApp(t)
	if _, err := component.EnsureBuiltins(context.Background(), component.NewService(a.pool, nil, nil)); err != nil {
		t.Fatal(err)
	}
	acme := a.createTenant(t, "acme")
	a.addMember(t, "ops@acme.example", acme.ID, access.TenantAdmin)
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
		admin.pressIn(`[data-testid="slots"] [data-testid="save"]`)
	}
	admin.addSlot("db", "simcloud-machine")
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

	// Published from the stack's page.
	admin.publishStack(stackPath, "first version")

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
	ops.pressIn(`[data-testid="slots"] [data-testid="save"]`)
	if eval[int](ops, `document.querySelectorAll('[data-testid="no-problems"]').length`) != 1 {
		t.Fatalf("the fork's draft has problems: %q", ops.text(`[data-testid="problems"]`))
	}
	ops.publishStack(forkPath, "with a cache")
	ops.open(forkPath)
	if n := eval[int](ops, `document.querySelectorAll('[data-testid="parent-newer"]').length`); n != 0 {
		t.Fatal("the fork says its parent has newer versions before the parent changed")
	}

	// The provider publishes v2 with one more slot; the fork's page says so, and compares.
	admin.open(editPath)
	admin.addSlot("web3", "simcloud-machine")
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
