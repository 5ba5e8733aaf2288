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
)

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
	b, err := os.ReadFile(filepath.Join("..", "app", "domain", "component", "testdata", name))
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

// markers lists the markers Nimbus set on the model of the editor of name.
func (s *session) markers(name string) []marker {
	s.t.Helper()
	return eval[[]marker](s, fmt.Sprintf(`monaco.editor.getModelMarkers({owner: 'nimbus', resource: nimbusEditors[%q].getModel().uri})
		.map(m => ({line: m.startLineNumber, startColumn: m.startColumn, endColumn: m.endColumn, severity: m.severity, message: m.message}))`, name))
}

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
