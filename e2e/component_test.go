package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"nimbus/db/dbtest"
)

// TestBrowser_ComponentEditorPublishDiffCatalog walks a component through its life in the
// browser: written in Monaco, refused with a marker on the faulty line, fixed and created,
// edited through the schema builder, published twice, compared, and found in the catalog.
func TestBrowser_ComponentEditorPublishDiffCatalog(t *testing.T) {
	t.Parallel()
	program, inputs, outputs := testdata(t, "machine.yaml"), testdata(t, "machine.inputs.json"), testdata(t, "machine.outputs.json")
	typo, typoLine := misspell(t, program, "resources:", "resorces:")

	a := startApp(t)
	s := newSession(t, newBrowser(t), a)
	broken := s.consoleProblems()
	s.signIn(adminEmail, adminPassword)

	// A new component, written through Monaco's API as an author's typing would leave it.
	s.open("/components/new")
	s.waitForEditors()
	s.fill("#f-name", "simcloud-machine")
	s.setEditor("input_schema", inputs)
	s.setEditor("output_schema", outputs)
	s.setEditor("code", typo)
	if got := eval[string](s, `document.getElementById('f-code').value`); got != typo {
		t.Fatalf("the code textarea the form posts holds %q, want the editor's text", got)
	}

	// Ctrl+S inside the editor saves through htmx; the server refuses the typo.
	s.pressSaveIn("code")
	s.waitFor(`document.querySelectorAll('#save-result .problems li').length > 0`)
	problems := eval[[]string](s, `[...document.querySelectorAll('#save-result .problems li')].map(li => li.textContent)`)
	if !containsAny(problems, `did you mean "resources"`) {
		t.Fatalf("problems after saving the typo: %q, want one saying did you mean \"resources\"", problems)
	}
	if want := fmt.Sprintf("Program line %d, column 1: ", typoLine); !containsAny(problems, want) {
		t.Errorf("problems %q: none starts with %q", problems, want)
	}
	if path := s.path(); path != "/components/new" {
		t.Fatalf("a refused save left the editor for %s", path)
	}
	markers := s.markers("code")
	if !slices.ContainsFunc(markers, func(m marker) bool {
		return m.Line == typoLine && m.StartColumn == 1 && m.EndColumn == len("resorces")+1 && m.Severity == markerError &&
			strings.Contains(m.Message, `did you mean "resources"`)
	}) {
		t.Fatalf("markers on the program: %+v, want one under resorces on line %d", markers, typoLine)
	}
	s.screenshot("component-editor-problems")

	// Fixed, the Save button creates it, and htmx follows the server to the draft's editor.
	s.setEditor("code", program)
	if status := s.submitAndWait(`[data-testid="save"]`); status != 200 {
		t.Fatalf("create: the editor answered %d, want 200; problems %q", status, s.problemTexts())
	}
	editPath := s.path()
	if !strings.HasPrefix(editPath, "/components/") || !strings.HasSuffix(editPath, "/edit") {
		t.Fatalf("after creating, the browser is on %s, want the draft's editor", editPath)
	}
	componentPath := strings.TrimSuffix(editPath, "/edit")
	s.waitForEditors()
	if n := len(s.markers("code")); n != 0 {
		t.Errorf("the fresh editor shows %d markers, want none", n)
	}
	cores := builderRow("input_schema", "cores")
	if got := eval[string](s, `document.querySelector(`+jsString(cores+` [data-key="name"]`)+`)?.value ?? ''`); got != "cores" {
		t.Fatalf("the inputs builder has no cores row (name field %q)", got)
	}
	if got := eval[string](s, `document.querySelector(`+jsString(cores+` [data-key="default"]`)+`).value`); got != "2" {
		t.Errorf("the builder shows cores defaulting to %q, want 2", got)
	}
	s.click(`[data-tab="input_schema"]`)
	s.screenshot("component-editor-inputs")

	s.publish(editPath, "First version")

	// v2: the default of cores, changed in the builder, and a line of the program.
	s.open(editPath)
	s.waitForEditors()
	s.click(`[data-tab="input_schema"]`)
	s.retype(cores+` [data-key="default"]`, "4")
	s.waitFor(`JSON.parse(nimbusEditors.input_schema.getValue()).properties.cores.default === 4`)
	if got := eval[string](s, `document.getElementById('f-input_schema').value`); !strings.Contains(got, `"default": 4`) {
		t.Fatalf("the input schema textarea holds %s, want cores' default 4 in it", got)
	}
	v2 := strings.Replace(program, "description: A virtual machine", "description: A sized virtual machine", 1)
	s.setEditor("code", v2)
	s.pressSave() // the focus is still in the builder's default field
	s.waitFor(`document.querySelector('#save-result [data-testid="saved"]') !== null`)
	s.publish(editPath, "Cores default to 4")

	if path := s.path(); path != componentPath {
		t.Fatalf("after publishing, the browser is on %s, want %s", path, componentPath)
	}

	// A published version is shown read-only: Monaco and the builder offer nothing to change.
	s.open(componentPath + "/versions/1")
	if crumbs := s.crumbs(); !slices.Equal(crumbs, []string{"Catalog /catalog", "simcloud-machine " + componentPath, "Version 1"}) {
		t.Errorf("v1's breadcrumbs are %q", crumbs)
	}
	s.waitForEditors()
	s.click(`[data-tab="input_schema"]`)
	if n := eval[int](s, `document.querySelectorAll('.schema-builder input, .schema-builder select, .schema-builder button').length`); n != 0 {
		t.Errorf("the read-only builder has %d controls, want none", n)
	}
	if cells := eval[[]string](s, `[...document.querySelectorAll(`+jsString(cores+" .sb-main td")+`)].map(td => td.textContent)`); !slices.Equal(cells, []string{"cores", "integer", "2", "", "—"}) {
		t.Errorf("v1's cores row reads %q, want cores, integer, default 2, not required, no resolver", cells)
	}
	if !eval[bool](s, `nimbusEditors.code.getOption(monaco.editor.EditorOption.readOnly)`) {
		t.Error("v1's program is editable")
	}
	s.screenshot("component-version-read-only")

	// The two versions side by side in Monaco's diff editor.
	s.open(componentPath)
	s.choose("#f-from", "1")
	s.choose("#f-to", "2")
	if status := s.submit(`form[action$="/diff"]`); status != 200 {
		t.Fatalf("diff: status %d", status)
	}
	if crumbs := s.crumbs(); !slices.Equal(crumbs, []string{"Catalog /catalog", "simcloud-machine " + componentPath, "Compare v1 with v2"}) {
		t.Errorf("the diff's breadcrumbs are %q", crumbs)
	}
	s.waitLong(`document.querySelector('#diff-editor .monaco-diff-editor') !== null`, 20*time.Second)
	s.waitFor(`(monaco.editor.getDiffEditors()[0]?.getLineChanges()?.length ?? 0) >= 1`)
	if eval[bool](s, `getComputedStyle(document.querySelector('.diff-fallback')).display !== 'none'`) {
		t.Error("the plain-text fallback is still shown beside the diff editor")
	}
	if got := eval[string](s, `monaco.editor.getDiffEditors()[0].getModel().modified.getValue()`); got != v2 {
		t.Errorf("the diff's right side is %q, want v2's program", got)
	}
	s.screenshot("component-diff-light")
	s.click(".theme-toggle")
	s.waitFor(`document.querySelector('#diff-editor .monaco-editor.vs-dark') !== null`)
	s.screenshot("component-diff-dark")

	// The catalog finds it by name, hides it for another provider, and shows v2 when only
	// published components are asked for.
	s.open("/catalog")
	s.fill("#f-search", "machine")
	s.submit(`form[data-testid="catalog-filters"]`)
	card := `[data-testid="catalog"] [data-component="simcloud-machine"]`
	if !s.exists(card) {
		t.Fatalf("searching the catalog for machine does not find simcloud-machine")
	}
	s.choose("#f-provider", "aws")
	s.submit(`form[data-testid="catalog-filters"]`)
	if s.exists(card) {
		t.Errorf("with provider aws the catalog still shows simcloud-machine")
	}
	s.choose("#f-provider", "simcloud")
	s.click(`input[name="published"]`)
	s.submit(`form[data-testid="catalog-filters"]`)
	if !s.exists(card) {
		t.Fatalf("simcloud, published only: the catalog does not show simcloud-machine")
	}
	if badges := eval[[]string](s, `[...document.querySelectorAll(`+jsString(card+" .badge")+`)].map(b => b.textContent.trim())`); !slices.Contains(badges, "v2") {
		t.Errorf("the catalog card shows %q, want v2 among them", badges)
	}

	if seen := unexpected(broken()); len(seen) > 0 {
		t.Errorf("the pages reported errors:\n%s", strings.Join(seen, "\n"))
	}
}

// TestBrowser_SchemaBuilderFollowsJSON edits an input schema through the builder and checks
// the JSON after each step, then breaks the JSON by hand and fixes it.
func TestBrowser_SchemaBuilderFollowsJSON(t *testing.T) {
	t.Parallel()
	a := startApp(t)
	s := newSession(t, newBrowser(t), a)
	broken := s.consoleProblems()
	s.signIn(adminEmail, adminPassword)
	s.open("/components/new")
	s.waitForEditors()
	s.click(`[data-tab="input_schema"]`)
	s.waitFor(`document.querySelector(` + jsString(builderRow("input_schema", "name")) + `) !== null`)

	// The JSON of the input schema and of the resolver bindings, as the form would post them.
	type property struct {
		Type    string `json:"type"`
		Default any    `json:"default"`
		Enum    []any  `json:"enum"`
		Minimum *int   `json:"minimum"`
		Secret  bool   `json:"x-secret"`
	}
	type schema struct {
		Properties map[string]property `json:"properties"`
		Required   []string            `json:"required"`
		Order      []string            `json:"x-order"`
	}
	posted := func() (schema, map[string]string) {
		t.Helper()
		var sc schema
		var bindings map[string]string
		raw := eval[[]string](s, `[document.getElementById('f-input_schema').value, document.getElementById('f-resolver_bindings').value]`)
		if err := json.Unmarshal([]byte(raw[0]), &sc); err != nil {
			t.Fatalf("the input schema is not JSON: %v\n%s", err, raw[0])
		}
		if err := json.Unmarshal([]byte(raw[1]), &bindings); err != nil {
			t.Fatalf("the resolver bindings are not JSON: %v\n%s", err, raw[1])
		}
		return sc, bindings
	}

	s.click(`.schema-builder[data-schema-for="input_schema"] [data-action="add"]`)
	// The new row's name is selected: typing replaces it.
	if err := chromedp.Do(s.ctx, chromedp.KeyEvent("size")); err != nil {
		t.Fatal(err)
	}
	size := builderRow("input_schema", "size")
	s.selectOption(size+` [data-key="type"]`, "integer")
	s.retype(size+` [data-key="default"]`, "3")
	s.retype(size+` [data-key="enum"]`, "1, 3, 5")
	s.retype(size+` [data-key="minimum"]`, "1")
	s.click(size + ` [data-key="required"]`)
	s.click(size + ` [data-key="x-secret"]`)
	s.selectOption(size+` [data-key="resolver"]`, "ipam.prefix_length")
	sc, bindings := posted()
	got := sc.Properties["size"]
	if got.Type != "integer" || got.Default != float64(3) || !slices.Equal(got.Enum, []any{float64(1), float64(3), float64(5)}) ||
		got.Minimum == nil || *got.Minimum != 1 || !got.Secret {
		t.Errorf("after the edits size is %+v, want an integer defaulting to 3 of 1, 3, 5, at least 1, secret", got)
	}
	if !slices.Equal(sc.Order, []string{"name", "size"}) || !slices.Equal(sc.Required, []string{"name", "size"}) || bindings["size"] != "ipam.prefix_length" {
		t.Errorf("after adding size: x-order %q, required %q, bindings %v", sc.Order, sc.Required, bindings)
	}

	// A rename carries the property's place, its requiredness and its binding along.
	s.retype(size+` [data-key="name"]`, "count")
	count := builderRow("input_schema", "count")
	s.click(count + ` [data-action="up"]`)
	sc, bindings = posted()
	if _, ok := sc.Properties["size"]; ok || !slices.Equal(sc.Order, []string{"count", "name"}) || !slices.Equal(sc.Required, []string{"name", "count"}) || bindings["count"] != "ipam.prefix_length" {
		t.Errorf("after renaming size to count and moving it up: x-order %q, required %q, bindings %v", sc.Order, sc.Required, bindings)
	}
	if !eval[bool](s, `document.activeElement?.closest('tbody')?.dataset.name === 'count' && !!document.activeElement.dataset.action`) {
		t.Errorf("after moving a row the focus is on %s, want it on the row's move buttons", eval[string](s, `document.activeElement?.outerHTML ?? 'nothing'`))
	}
	s.screenshot("schema-builder-edited")
	s.click(count + ` [data-action="remove"]`)
	sc, bindings = posted()
	if _, ok := sc.Properties["count"]; ok || !slices.Equal(sc.Required, []string{"name"}) || len(bindings) != 0 {
		t.Errorf("after removing count: properties %v, required %q, bindings %v", sc.Properties, sc.Required, bindings)
	}

	// JSON that does not parse greys the table out; fixed, the table follows it.
	s.setEditor("input_schema", `{"type": "object", "properties": {`)
	s.waitFor(`document.querySelector('.schema-builder[data-schema-for="input_schema"] fieldset')?.disabled === true`)
	if msg := s.text(`.schema-builder[data-schema-for="input_schema"] .sb-broken`); msg != "Fix the JSON to use the form" {
		t.Errorf("with broken JSON the builder says %q", msg)
	}
	s.screenshot("schema-builder-broken")
	s.setEditor("input_schema", `{"type": "object", "properties": {"zone": {"type": "string", "enum": ["a", "b"]}}}`)
	s.waitFor(`document.querySelector(` + jsString(builderRow("input_schema", "zone")+` [data-key="enum"]`) + `)?.value === 'a, b'`)

	if seen := unexpected(broken()); len(seen) > 0 {
		t.Errorf("the pages reported errors:\n%s", strings.Join(seen, "\n"))
	}
}

// selectOption picks value in the select sel and fires the events a person's choice fires.
func (s *session) selectOption(sel, value string) {
	s.t.Helper()
	ok := eval[bool](s, fmt.Sprintf(`(() => {
		const el = document.querySelector(%s);
		if (!el || ![...el.options].some(o => o.value === %s)) return false;
		el.focus();
		el.value = %s;
		el.dispatchEvent(new Event('input', {bubbles: true}));
		el.dispatchEvent(new Event('change', {bubbles: true}));
		return true;
	})()`, jsString(sel), jsString(value), jsString(value)))
	if !ok {
		s.t.Fatalf("no option %s in %s", value, sel)
	}
}

// testdata reads a file of app/domain/component/testdata.
func testdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "app", "component", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// misspell replaces the line that is exactly want with typo and returns the program and the
// line number it is on.
func misspell(t *testing.T, program, want, typo string) (string, int) {
	t.Helper()
	lines := strings.Split(program, "\n")
	i := slices.Index(lines, want)
	if i < 0 {
		t.Fatalf("no line %q in the program", want)
	}
	lines[i] = typo
	return strings.Join(lines, "\n"), i + 1
}

func containsAny(list []string, part string) bool {
	return slices.ContainsFunc(list, func(s string) bool { return strings.Contains(s, part) })
}

// builderRow selects the schema builder's rows of one property.
func builderRow(schema, property string) string {
	return fmt.Sprintf(`.schema-builder[data-schema-for=%q] tbody[data-name=%q]`, schema, property)
}

// waitForEditors waits until editor.js has put Monaco in place of the code textareas.
func (s *session) waitForEditors() {
	s.t.Helper()
	s.waitLong(`!!window.nimbusEditors?.code && !!document.querySelector('.monaco-host .monaco-editor')`, 20*time.Second)
}

// setEditor replaces the text of the Monaco editor of the textarea named name.
func (s *session) setEditor(name, text string) {
	s.t.Helper()
	eval[bool](s, fmt.Sprintf(`(nimbusEditors[%q].setValue(%s), true)`, name, jsString(text)))
}

// pressSaveIn presses Ctrl+S with the focus in the Monaco editor of name.
func (s *session) pressSaveIn(name string) {
	s.t.Helper()
	if !eval[bool](s, fmt.Sprintf(`(nimbusEditors[%q].focus(), nimbusEditors[%q].hasTextFocus())`, name, name)) {
		s.t.Fatalf("the %s editor does not take the focus", name)
	}
	s.pressSave()
}

// pressSave presses Ctrl+S wherever the focus is.
func (s *session) pressSave() {
	s.t.Helper()
	if err := chromedp.Do(s.ctx, chromedp.KeyEvent("s", chromedp.KeyModifiers(chromedp.ModifierCtrl))); err != nil {
		s.t.Fatalf("press Ctrl+S: %v", err)
	}
}

// submitAndWait clicks sel, which saves through htmx, and waits for the page the server
// sends the browser to; it fails when none comes. The wait ends with the page's load event:
// the editor's page loads the code editor, which on a busy machine takes many seconds.
func (s *session) submitAndWait(sel string) int64 {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, time.Minute)
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(sel)))
	if err != nil {
		s.t.Fatalf("click %s and wait for the next page: %v; problems %q", sel, err, s.problemTexts())
	}
	return resp.Status
}

func (s *session) problemTexts() []string {
	return eval[[]string](s, `[...document.querySelectorAll('#save-result .problems li')].map(li => li.textContent)`)
}

// retype replaces the text of the input sel by typing text over it, as a person would.
func (s *session) retype(sel, text string) {
	s.t.Helper()
	if !eval[bool](s, fmt.Sprintf(`(() => { const el = document.querySelector(%s); if (!el) return false; el.focus(); el.select(); return true })()`, jsString(sel))) {
		s.t.Fatalf("no %s on %s", sel, s.path())
	}
	if err := chromedp.Do(s.ctx, chromedp.KeyEvent(text)); err != nil {
		s.t.Fatalf("type into %s: %v", sel, err)
	}
}

// publish has the engine check the saved draft from its editor, as publishing requires where
// the engine can run the provider, then publishes it and checks it lands on the component.
func (s *session) publish(editPath, changelog string) {
	s.t.Helper()
	if s.path() != editPath {
		s.open(editPath)
	}
	s.checkDraft()
	s.waitFor(`document.querySelector('[data-testid="publish"]')?.disabled === false`)
	s.fill("#f-changelog", changelog)
	if status := s.submit(`form[action$="/publish"]`); status != 200 {
		s.t.Fatalf("publish %q: status %d; problems %q", changelog, status, s.problemTexts())
	}
	if rows := s.rows("versions"); !slices.ContainsFunc(rows, func(r []string) bool { return slices.Contains(r, changelog) }) {
		s.t.Fatalf("after publishing %q the versions table is %q", changelog, rows)
	}
}

// checkDraft clicks "Check with the engine" and waits for the panel, which polls the check,
// to show that the engine passed the draft.
func (s *session) checkDraft() {
	s.t.Helper()
	panel := `#check-result [data-testid="check"]`
	s.click(`[data-testid="check-button"]`)
	s.waitWithin(`['succeeded', 'failed'].includes(document.querySelector(`+jsString(panel)+`)?.dataset.status)`, engineWait)
	if status := s.text(panel + ` .badge`); status != "Check passed" {
		s.t.Fatalf("the engine's check: %s\n%s", status, s.text(panel))
	}
}

func (s *session) exists(sel string) bool {
	s.t.Helper()
	return eval[bool](s, fmt.Sprintf(`document.querySelector(%s) !== null`, jsString(sel)))
}

// markerError is monaco.MarkerSeverity.Error.
const markerError = 8

type marker struct {
	Line        int    `json:"line"`
	StartColumn int    `json:"startColumn"`
	EndColumn   int    `json:"endColumn"`
	Severity    int    `json:"severity"`
	Message     string `json:"message"`
}

// markers lists the markers Nimbus set on the model of the editor of name.
func (s *session) markers(name string) []marker {
	s.t.Helper()
	return eval[[]marker](s, fmt.Sprintf(`monaco.editor.getModelMarkers({owner: 'nimbus', resource: nimbusEditors[%q].getModel().uri})
		.map(m => ({line: m.startLineNumber, startColumn: m.startColumn, endColumn: m.endColumn, severity: m.severity, message: m.message}))`, name))
}

// knownErrors are what the pages are known to log: the browser reports a refused save's 422
// answer as a failed load.
var knownErrors = []string{"status of 422"}

// unexpected drops the known errors from seen.
func unexpected(seen []string) []string {
	var out []string
	for _, msg := range seen {
		if !slices.ContainsFunc(knownErrors, func(known string) bool { return strings.Contains(msg, known) }) {
			out = append(out, msg)
		}
	}
	return out
}

// consoleProblems records what the page reports as broken: uncaught exceptions, console
// errors, and browser log errors such as CSP refusals. The returned func lists them so far.
func (s *session) consoleProblems() func() []string {
	var (
		mu   sync.Mutex
		seen []string
	)
	add := func(msg string) {
		mu.Lock()
		seen = append(seen, msg)
		mu.Unlock()
	}
	err := chromedp.Listen(s.ctx, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			msg := ev.ExceptionDetails.Text
			if ev.ExceptionDetails.Exception != nil {
				msg += " " + ev.ExceptionDetails.Exception.Description
			}
			add("exception: " + msg)
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning {
				var parts []string
				for _, arg := range ev.Args {
					parts = append(parts, strings.Trim(string(arg.Value), `"`)+arg.Description)
				}
				add(fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(parts, " ")))
			}
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.EntryLevelError || ev.Entry.Level == cdplog.EntryLevelWarning {
				add(fmt.Sprintf("log %s (%s): %s %s", ev.Entry.Level, ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
			}
		}
	})
	if err != nil {
		s.t.Fatalf("listen to the console: %v", err)
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// waitLong is waitFor with a deadline of its own, for Monaco, which loads its scripts after
// the page.
func (s *session) waitLong(js string, timeout time.Duration) {
	s.t.Helper()
	if err := chromedp.Do(s.ctx, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(timeout))); err != nil {
		s.t.Fatalf("waiting for %s: %v", js, err)
	}
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

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

// secretProgram reads a password its config declares secret and its schema marks so.
const secretProgram = `name: secret-disk
runtime: yaml
config:
  name:
    type: string
  password:
    type: string
    secret: true
resources:
  disk:
    type: simcloud:index:Disk
    properties:
      name: ${name}
      image: ${password}
outputs:
  disk_id: ${disk.id}
`

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
