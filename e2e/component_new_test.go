package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"nimbus/db/dbtest"
)

// TestBrowser_NewComponentStarterWordsAndPages starts a component from the starter of the
// semantic type chosen, has the editor mark YAML mistakes on their own lines in words, and
// finds the component's contract, its deployments and the catalog laid out as a reader needs,
// all without the engine.
func TestBrowser_NewComponentStarterWordsAndPages(t *testing.T) {
	t.Parallel()
	a := startApp(t)
	deployed := dbtest.NewDeployment(t, a.pool)
	acme := a.createTenant(t, "acme")
	s := newSession(t, newBrowser(t), a)
	broken := s.consoleProblems()
	s.signIn(adminEmail, adminPassword)

	s.open("/components/new")
	if crumbs := s.crumbs(); !slices.Equal(crumbs, []string{"Catalog /catalog", "New component"}) {
		t.Errorf("the new component's breadcrumbs are %q", crumbs)
	}
	if href := eval[string](s, `document.querySelector('[data-testid="cancel"]')?.getAttribute('href') ?? ''`); href != "/catalog" {
		t.Errorf("New component's Cancel leads to %q, want /catalog", href)
	}
	s.waitForEditors()
	if code := eval[string](s, `nimbusEditors.code.getValue()`); !strings.Contains(code, "type: simcloud:index:Machine") {
		t.Errorf("the starter of a VirtualMachine makes no machine:\n%s", code)
	}
	// Another semantic type, another starter, program and schemas alike.
	s.selectOption("#f-semantic_type", "VirtualNetwork")
	s.waitFor(`nimbusEditors.code.getValue().includes('type: simcloud:index:Network') && nimbusEditors.output_schema.getValue().includes('network_id')`)
	starter := eval[string](s, `nimbusEditors.code.getValue()`)

	// A key written twice, and a line indented out of step: each marked on its own line, in
	// words, the parser's own message nowhere.
	s.fill("#f-name", "net-starter")
	s.choose("#f-tenant_id", acme.ID.String())
	s.fill("#f-description", "A network made from the starter, with a description long enough to wrap onto a second line of its card.")
	twice, twiceLine := misspell(t, starter, "      cidr: 10.10.0.0/24", "      cidr: 10.10.0.0/24\n      name: again")
	s.setEditor("code", twice)
	s.pressSaveIn("code")
	s.waitFor(`document.querySelectorAll('#save-result .problems li').length > 0`)
	if want := fmt.Sprintf(`Program line %d, column 7: "name" appears twice here`, twiceLine+1); !containsAny(s.problemTexts(), want) {
		t.Errorf("problems %q, want one starting %q", s.problemTexts(), want)
	}
	if !slices.ContainsFunc(s.markers("code"), func(m marker) bool { return m.Line == twiceLine+1 && strings.Contains(m.Message, "appears twice") }) {
		t.Errorf("markers %+v, want one on line %d", s.markers("code"), twiceLine+1)
	}
	astray, astrayLine := misspell(t, starter, "      cidr: 10.10.0.0/24", "     cidr: 10.10.0.0/24")
	s.setEditor("code", astray)
	s.pressSaveIn("code")
	s.waitFor(`[...document.querySelectorAll('#save-result .problems li')].some(li => li.textContent.includes('indented'))`)
	problems := s.problemTexts()
	if want := fmt.Sprintf("Program line %d, column 6: this line is not indented in step", astrayLine); len(problems) != 1 || !strings.HasPrefix(problems[0], want) {
		t.Errorf("problems %q, want only one starting %q", problems, want)
	}
	if containsAny(problems, "expected") || containsAny(problems, "yaml:") {
		t.Errorf("the parser's own words reach the author: %q", problems)
	}
	if !slices.ContainsFunc(s.markers("code"), func(m marker) bool { return m.Line == astrayLine && m.Severity == markerError }) {
		t.Errorf("markers %+v, want one on line %d", s.markers("code"), astrayLine)
	}
	s.screenshot("component-editor-yaml-line")
	// What the author wrote is theirs: another semantic type no longer swaps the starter in.
	s.selectOption("#f-semantic_type", "BlockStorage")
	if code := eval[string](s, `nimbusEditors.code.getValue()`); code != astray {
		t.Errorf("choosing another type replaced the author's program with:\n%s", code)
	}
	s.selectOption("#f-semantic_type", "VirtualNetwork")

	s.setEditor("code", starter)
	if status := s.submitAndWait(`[data-testid="save"]`); status != 200 {
		t.Fatalf("create: the editor answered %d; problems %q", status, s.problemTexts())
	}
	editPath := s.path()
	componentPath := strings.TrimSuffix(editPath, "/edit")
	if crumbs := s.crumbs(); !slices.Equal(crumbs, []string{"Catalog /catalog", "net-starter " + componentPath, "Edit draft"}) {
		t.Errorf("the editor's breadcrumbs are %q", crumbs)
	}
	// Never checked, the draft cannot be published, and the page says why.
	if !eval[bool](s, `document.querySelector('[data-testid="publish"]').disabled`) {
		t.Error("Publish is enabled for a draft the engine never checked")
	}
	if why := s.text(`[data-testid="publish-why"]`); !strings.Contains(why, "Check the saved draft with the engine first") {
		t.Errorf("beside the disabled Publish: %q", why)
	}

	// The component's page: its contract from the schemas, with titles and types.
	s.open(componentPath)
	if crumbs := s.crumbs(); !slices.Equal(crumbs, []string{"Catalog /catalog", "net-starter"}) {
		t.Errorf("the component's breadcrumbs are %q", crumbs)
	}
	if owner := eval[string](s, `document.querySelector('a[href="/tenants/`+acme.ID.String()+`"]')?.textContent.trim() ?? ''`); owner != "tenant acme" {
		t.Errorf("the owner links to its tenant as %q, want tenant acme", owner)
	}
	if rows := s.rows("inputs"); len(rows) != 1 || !slices.Equal(rows[0], []string{"name", "Name", "string required", "—", "Name of the network"}) {
		t.Errorf("inputs %q, want name: Name, a required string", rows)
	}
	if rows := s.rows("outputs"); len(rows) != 1 || !slices.Equal(rows[0], []string{"network_id", "Network ID", "string", ""}) {
		t.Errorf("outputs %q, want network_id: Network ID, a string", rows)
	}

	// A component with a deployment links to it and its environment; a version nobody known
	// published says only when.
	s.open("/components/" + deployed.ComponentID.String())
	links := eval[[]string](s, `[...document.querySelectorAll('[data-testid="deployments"] tbody a')].map(a => a.textContent.trim() + ' ' + a.getAttribute('href'))`)
	if want := []string{"web /deployments/" + deployed.DeploymentID.String(), "dev /environments/" + deployed.EnvironmentID.String()}; !slices.Equal(links, want) {
		t.Errorf("the deployments table links %q, want %q", links, want)
	}
	if published := column(s.rows("versions"), 2); len(published) != 1 || strings.HasPrefix(published[0], ",") || published[0] == "" {
		t.Errorf("the version's Published cell reads %q", published)
	}
	s.screenshot("component-page")

	// The catalog: cards of a row as tall as each other, each Deploy button inside its card.
	s.open("/catalog")
	heights := eval[[]int](s, `[...document.querySelectorAll('[data-testid="catalog"] [data-component]')].map(c => Math.round(c.getBoundingClientRect().height))`)
	if len(heights) != 2 || heights[0] != heights[1] {
		t.Errorf("the catalog's two cards are %v pixels tall, want two of one height", heights)
	}
	if outside := eval[int](s, `[...document.querySelectorAll('[data-deploy]')].filter(b => !b.closest('[data-component]')).length`); outside != 0 || !s.exists(`[data-component] [data-deploy]`) {
		t.Errorf("%d Deploy buttons sit outside their cards", outside)
	}
	s.screenshot("catalog-cards")

	if seen := unexpected(broken()); len(seen) > 0 {
		t.Errorf("the pages reported errors:\n%s", strings.Join(seen, "\n"))
	}
}

// TestBrowser_SecretComponentChecksThenPublishes takes a component with a secret input through
// the engine's check, which used to refuse its placeholder as plain config, and publishes it:
// Publish waits for a passed check and says so, a refused publish keeps the changelog and says
// why beside the button, and the next passed check clears that refusal.
func TestBrowser_SecretComponentChecksThenPublishes(t *testing.T) {
	t.Parallel()
	a := startApp(t)
	s := newSession(t, newBrowser(t), a)
	broken := s.consoleProblems()
	s.signIn(adminEmail, adminPassword)

	s.open("/components/new")
	s.waitForEditors()
	s.fill("#f-name", "secret-disk")
	s.setEditor("input_schema", `{"type": "object", "required": ["name", "password"], "properties": {
  "name": {"type": "string", "title": "Name"},
  "password": {"type": "string", "title": "Password", "x-secret": true}}}`)
	s.setEditor("output_schema", `{"type": "object", "properties": {"disk_id": {"type": "string", "title": "Disk ID"}}}`)
	s.setEditor("code", secretProgram)
	if status := s.submitAndWait(`[data-testid="save"]`); status != 200 {
		t.Fatalf("create: the editor answered %d; problems %q", status, s.problemTexts())
	}
	editPath := s.path()
	s.waitForEditors()
	publish := `document.querySelector('[data-testid="publish"]')`
	if !eval[bool](s, publish+`.disabled`) {
		t.Fatal("Publish is enabled before any check")
	}
	const changelog = "A disk sealed with a password"
	s.fill("#f-changelog", changelog)

	s.checkDraft()
	s.waitFor(publish + `.disabled === false && !document.querySelector('[data-testid="publish-why"]')`)

	// Another tab saves a change to the draft: the publish of the revision this page shows is
	// refused, beside the Publish button, with the changelog kept.
	eval[bool](s, `(() => {
		const form = document.getElementById('component-form');
		const data = new FormData(form);
		data.set('code', data.get('code') + '# changed in another tab\n');
		fetch(form.action, {method: 'POST', body: data}).then(r => { window.otherTab = r.ok ? 'saved' : 'status ' + r.status });
		return true;
	})()`)
	s.waitFor(`window.otherTab !== undefined`)
	if got := eval[string](s, `window.otherTab`); got != "saved" {
		t.Fatalf("the other tab's save: %s", got)
	}
	if status := s.submit(`form[action$="/publish"]`); status != 422 {
		t.Fatalf("publishing a revision since changed: status %d, want 422", status)
	}
	if got := eval[string](s, `document.getElementById('f-changelog').value`); got != changelog {
		t.Errorf("after the refusal the changelog reads %q, want %q", got, changelog)
	}
	refusal := eval[string](s, `document.querySelector('form[action$="/publish"] #publish-result')?.textContent ?? ''`)
	if !strings.Contains(refusal, "the draft changed after you opened it") {
		t.Errorf("by the Publish button: %q, want why it was not published", refusal)
	}
	if s.exists(`#save-result [data-testid="save-errors"]`) {
		t.Error("the publish's refusal is shown by the Save button too")
	}
	// The changed draft has not been checked.
	if why := s.text(`[data-testid="publish-why"]`); !eval[bool](s, publish+`.disabled`) || !strings.Contains(why, "Check the saved draft") {
		t.Errorf("after the draft changed Publish is enabled, or says %q", why)
	}
	s.screenshot("component-publish-refused")

	s.waitForEditors()
	s.checkDraft()
	s.waitFor(publish + `.disabled === false && document.querySelector('#publish-result').textContent.trim() === ''`)
	if status := s.submit(`form[action$="/publish"]`); status != 200 {
		t.Fatalf("publish: status %d; %s", status, s.text("#publish-result"))
	}
	if path := s.path(); path != strings.TrimSuffix(editPath, "/edit") {
		t.Fatalf("after publishing the browser is on %s", path)
	}
	if rows := s.rows("versions"); len(rows) != 1 || rows[0][1] != changelog {
		t.Errorf("versions %q, want v1 with the changelog typed before the refusal", rows)
	}
	if row := rowWith(s.rows("inputs"), "password"); len(row) < 3 || !strings.Contains(row[2], "secret") {
		t.Errorf("the password input reads %q, want it marked secret", row)
	}

	if seen := unexpected(broken()); len(seen) > 0 {
		t.Errorf("the pages reported errors:\n%s", strings.Join(seen, "\n"))
	}
}

// crumbs is the breadcrumb trail: each link as its text and address, the page itself by name.
func (s *session) crumbs() []string {
	s.t.Helper()
	return eval[[]string](s, `[...document.querySelectorAll('[data-testid="breadcrumbs"] li')].map(li => {
		const a = li.querySelector('a');
		return a ? a.textContent.trim() + ' ' + a.getAttribute('href') : li.textContent.trim();
	})`)
}
