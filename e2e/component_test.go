package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
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

// markerError is monaco.MarkerSeverity.Error.
const markerError = 8

type marker struct {
	Line        int    `json:"line"`
	StartColumn int    `json:"startColumn"`
	EndColumn   int    `json:"endColumn"`
	Severity    int    `json:"severity"`
	Message     string `json:"message"`
}

// knownErrors are what the pages are known to log: the browser reports a refused save's 422
// answer as a failed load.
var knownErrors = []string{"status of 422"}

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
