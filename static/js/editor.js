// Nimbus component editor: enhances the editor page (views/components.templ, Editor) and the
// version diff page (Diff). Without JavaScript both stay plain forms and textareas that work.
//
//   - Monaco replaces each code textarea. The textarea stays in the form, hidden and updated on
//     every change, so the htmx post (or a plain submit) carries exactly what the author sees.
//   - Tabs, Ctrl+S / Cmd+S, the problem list and the schema builder work on the textareas
//     until Monaco is up and on its models after, so a missing or broken vendored Monaco
//     costs the highlighting and nothing else.
//   - On a new component, the starter (starter.js) follows the provider and semantic type.
//   - The schema builder (schema-builder.js) edits the input and output schemas as a table, in
//     step with the JSON.
//
// Loaded with defer after /static/vendor/monaco/vs/loader.js, dom.js, starter.js and schema-builder.js, so htmx (loaded in <head>) and
// the AMD loader are both there when this runs. The page's CSP allows no inline script and
// no eval; nothing here needs either.
(() => {
  "use strict";

  const MONACO_PATH = "/static/vendor/monaco/vs";
  const form = document.getElementById("component-form");
  const diffHost = document.getElementById("diff-editor");
  if (!form && !diffHost) return;

  let monaco = null; // the Monaco API, once loaded
  const docs = {}; // textarea name → doc (see createDoc)
  const editors = {}; // textarea name → Monaco editor; exposed as window.nimbusEditors

  const { h } = window.nimbusDOM;

  // ---- Documents: the text of each code field ----

  // A doc is one code field's text. It reads and writes the textarea until Monaco attaches a
  // model; from then on the model is the truth and every change is copied to the textarea.
  function createDoc(textarea) {
    const listeners = [];
    const changed = () => listeners.forEach((fn) => fn());
    const doc = {
      textarea,
      model: null,
      get: () => (doc.model ? doc.model.getValue() : textarea.value),
      set(text) {
        if (text === doc.get()) return;
        if (doc.model) replaceText(doc.model, text);
        else {
          textarea.value = text;
          changed();
        }
      },
      onChange: (fn) => listeners.push(fn),
      attach(model) {
        doc.model = model;
        model.onDidChangeContent(() => {
          textarea.value = model.getValue();
          changed();
        });
      },
    };
    textarea.addEventListener("input", changed);
    return doc;
  }

  // replaceText edits only the part of the model that differs, as one undo step: the cursor,
  // scroll position and markers elsewhere stay put, and Ctrl+Z in the editor undoes a change
  // made by the schema builder.
  function replaceText(model, text) {
    const old = model.getValue();
    let start = 0;
    while (start < old.length && start < text.length && old[start] === text[start]) start++;
    let end = 0;
    while (end < old.length - start && end < text.length - start &&
      old[old.length - 1 - end] === text[text.length - 1 - end]) end++;
    const from = model.getPositionAt(start);
    const to = model.getPositionAt(old.length - end);
    const range = { startLineNumber: from.lineNumber, startColumn: from.column, endLineNumber: to.lineNumber, endColumn: to.column };
    model.pushStackElement();
    model.pushEditOperations([], [{ range, text: text.slice(start, text.length - end) }], () => null);
    model.pushStackElement();
  }

  // ---- Tabs ----

  function tabs() {
    return form ? [...form.querySelectorAll(".tabs [data-tab]")] : [];
  }

  function setupTabs() {
    for (const tab of tabs()) {
      const panel = form.querySelector(`.tab-panel[data-panel="${tab.dataset.tab}"]`);
      tab.id = tab.id || `tab-${tab.dataset.tab}`;
      if (panel) {
        panel.id = panel.id || `panel-${tab.dataset.tab}`;
        panel.setAttribute("role", "tabpanel");
        panel.setAttribute("aria-labelledby", tab.id);
        tab.setAttribute("aria-controls", panel.id);
      }
      tab.tabIndex = tab.getAttribute("aria-selected") === "true" ? 0 : -1;
      tab.addEventListener("click", () => showTab(tab.dataset.tab));
      tab.addEventListener("keydown", moveBetweenTabs);
    }
  }

  function showTab(name) {
    for (const tab of tabs()) {
      const selected = tab.dataset.tab === name;
      tab.setAttribute("aria-selected", String(selected));
      tab.tabIndex = selected ? 0 : -1;
    }
    for (const panel of form.querySelectorAll(".tab-panel[data-panel]")) {
      panel.hidden = panel.dataset.panel !== name;
      // An editor created in a hidden panel measured itself at zero size.
      if (!panel.hidden) layoutEditorsIn(panel);
    }
  }

  // Arrow keys move between tabs, as the ARIA tabs pattern expects.
  function moveBetweenTabs(e) {
    const list = tabs();
    const step = { ArrowRight: 1, ArrowLeft: -1 }[e.key];
    if (!step) return;
    e.preventDefault();
    const next = list[(list.indexOf(e.currentTarget) + step + list.length) % list.length];
    showTab(next.dataset.tab);
    next.focus();
  }

  // tabFor names the tab holding the field, or "" when it is on no tab.
  function tabFor(field) {
    const el = form.querySelector(`[name="${CSS.escape(field)}"]`);
    return el?.closest(".tab-panel")?.dataset.panel || "";
  }

  function layoutEditorsIn(panel) {
    for (const [name, editor] of Object.entries(editors)) {
      if (panel.contains(docs[name].textarea)) editor.layout();
    }
  }

  // ---- Saving: Ctrl+S / Cmd+S ----

  function isSaveKey(e) {
    return (e.ctrlKey || e.metaKey) && !e.altKey && !e.shiftKey && (e.key === "s" || e.key === "S" || e.code === "KeyS");
  }

  function save() {
    if (form.hasAttribute("data-readonly")) return;
    syncTextareas();
    // htmx drops an invalid form without a word; the browser at least says what is wrong.
    if (!form.reportValidity()) return;
    if (window.htmx) window.htmx.trigger(form, "submit");
    else form.requestSubmit();
  }

  function syncTextareas() {
    for (const doc of Object.values(docs)) {
      if (doc.model) doc.textarea.value = doc.model.getValue();
    }
  }

  function setupSaveKey() {
    document.addEventListener("keydown", (e) => {
      // Inside Monaco its own Ctrl+S command (see createEditor) has already saved and
      // prevented the default.
      if (!isSaveKey(e) || e.defaultPrevented || form.hasAttribute("data-readonly")) return;
      e.preventDefault(); // no "Save page as" dialog
      save();
    });
  }

  // ---- Problems from a save: the list under the form and Monaco markers ----

  let problems = [];

  // Where the server reports problems: a save's, and a publish's by the Publish button.
  const RESULTS = ["save-result", "publish-result"];

  function readProblems(id) {
    const el = document.querySelector(`#${id} [data-errors]`);
    if (!el) return [];
    try {
      const list = JSON.parse(el.getAttribute("data-errors") || "[]");
      return Array.isArray(list) ? list : [];
    } catch {
      return [];
    }
  }

  function showProblems() {
    problems = [];
    for (const id of RESULTS) {
      const own = readProblems(id);
      const list = document.querySelector(`#${id} ul.problems`);
      if (list) list.replaceChildren(...own.map(problemItem));
      problems.push(...own);
    }
    applyMarkers();
    const tab = problems.length ? tabFor(problems[0].field) : "";
    if (tab) showTab(tab);
  }

  // FIELD_WORDS name the fields as the page does (as Problem.String in pages.templ).
  const FIELD_WORDS = {
    code: "Program", input_schema: "Input schema", output_schema: "Output schema",
    resolver_bindings: "Resolver bindings", display_name: "Display name", semantic_type: "Semantic type",
    tenant_id: "Owner", name: "Name", description: "Description", language: "Language",
    provider: "Provider", changelog: "Changelog", revision: "Revision", check: "Check",
  };

  function describe(p) {
    let where = "";
    if (p.line) where = p.column ? ` line ${p.line}, column ${p.column}` : ` line ${p.line}`;
    return `${FIELD_WORDS[p.field] || p.field}${where}: ${p.message}`;
  }

  // Each problem is a button that jumps to where it is.
  function problemItem(p) {
    const button = h("button", { type: "button", class: "problem-link" }, describe(p));
    button.addEventListener("click", () => revealProblem(p));
    return h("li", {}, button);
  }

  function revealProblem(p) {
    const tab = tabFor(p.field);
    if (tab) showTab(tab);
    const editor = editors[p.field];
    if (editor) {
      const position = { lineNumber: p.line || 1, column: p.column || 1 };
      editor.revealPositionInCenter(position);
      editor.setPosition(position);
      editor.focus();
      return;
    }
    const el = form.elements.namedItem(p.field);
    if (el && typeof el.focus === "function") el.focus();
  }

  function applyMarkers() {
    if (!monaco) return;
    for (const [name, doc] of Object.entries(docs)) {
      if (!doc.model) continue;
      const markers = problems.filter((p) => p.field === name).map((p) => markerFor(doc.model, p));
      monaco.editor.setModelMarkers(doc.model, "nimbus", markers);
    }
  }

  // markerFor underlines what starts at the problem's position (a word, or up to the next
  // space, such as ${ref}), or the whole line when the column is unknown, or the first line
  // when the line is unknown too.
  function markerFor(model, p) {
    const line = Math.min(Math.max(p.line || 1, 1), model.getLineCount());
    const lineEnd = model.getLineMaxColumn(line);
    let startColumn = 1;
    let endColumn = lineEnd;
    if (p.line && p.column && p.column < lineEnd) {
      startColumn = p.column;
      const word = model.getWordAtPosition({ lineNumber: line, column: startColumn });
      const rest = model.getLineContent(line).slice(startColumn - 1);
      endColumn = word && word.startColumn === startColumn
        ? word.endColumn
        : startColumn + Math.max(rest.search(/\s|$/), 1);
    }
    if (endColumn <= startColumn) endColumn = lineEnd; // an empty line: mark where it is
    return {
      severity: monaco.MarkerSeverity.Error,
      message: p.message,
      source: p.rule ? `nimbus(${p.rule})` : "nimbus",
      startLineNumber: line, startColumn, endLineNumber: line, endColumn,
    };
  }

  function setupProblems() {
    const swapped = (e) => {
      if (RESULTS.includes(e.detail?.target?.id)) showProblems();
    };
    document.addEventListener("htmx:afterSwap", swapped);
    document.addEventListener("htmx:oobAfterSwap", swapped);
    showProblems();
  }

  // ---- Monaco ----

  function loadMonaco(then) {
    const amd = window.require;
    if (typeof amd !== "function" || typeof amd.config !== "function") return; // no loader: textareas stay
    amd.config({ paths: { vs: MONACO_PATH } });
    amd(["vs/editor/editor.main"], (api) => {
      monaco = api && api.editor ? api : window.monaco;
      setupWorkers();
      then();
    }, (err) => console.warn("nimbus: the code editor did not load; the plain text fields stay", err));
  }

  // setupWorkers wraps the worker factory that editor.main installs. That factory starts each
  // worker (diffing, JSON and TypeScript checks) from a blob: URL whose script importScripts()
  // the same-origin worker file, which the page's CSP allows: worker-src 'self' blob: and
  // script-src 'self'. Should a stricter CSP refuse the worker, the browser fires an error on it
  // rather than throwing; Monaco then diffs on the main thread and drops the JSON checks, while
  // highlighting and editing go on. The wrapper only says why, once per worker, and turns a
  // synchronous refusal (older browsers throw) into that same failure.
  function setupWorkers() {
    const builtin = window.MonacoEnvironment;
    if (!builtin || typeof builtin.getWorker !== "function") return;
    const why = (label) => `nimbus: the ${label} worker did not start (does the CSP allow worker-src blob:?); the editor works without it`;
    window.MonacoEnvironment = {
      getWorker(moduleId, label) {
        try {
          const worker = builtin.getWorker(moduleId, label);
          worker.addEventListener("error", () => console.warn(why(label)));
          return worker;
        } catch (err) {
          console.warn(why(label), err);
          return failedWorker();
        }
      },
    };
  }

  // failedWorker stands in for a worker that could not start: it reports an error as soon as
  // Monaco listens, which Monaco handles as it does a real worker's failure.
  function failedWorker() {
    const noop = () => {};
    return {
      postMessage: noop,
      terminate: noop,
      removeEventListener: noop,
      addEventListener(type, listener) {
        if (type === "error") setTimeout(() => listener(new ErrorEvent("error", { message: "worker refused" })));
      },
    };
  }

  const LANGUAGES = { yaml: "yaml", typescript: "typescript", python: "python", json: "json" };
  const languageOf = (name) => LANGUAGES[name] || "plaintext";

  function isDark() {
    const theme = document.documentElement.dataset.theme;
    if (theme === "dark") return true;
    if (theme === "light") return false;
    return !!window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
  }

  const themeName = () => (isDark() ? "vs-dark" : "vs");

  // followTheme switches every editor when the app's theme toggle changes data-theme on <html>,
  // or when the system preference changes while the page follows it.
  function followTheme() {
    const apply = () => monaco.editor.setTheme(themeName());
    new MutationObserver(apply).observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme"] });
    window.matchMedia?.("(prefers-color-scheme: dark)").addEventListener?.("change", apply);
  }

  const EDITOR_OPTIONS = {
    automaticLayout: true,
    minimap: { enabled: false },
    scrollBeyondLastLine: false,
    fontSize: 13,
    tabSize: 2,
    insertSpaces: true,
    fixedOverflowWidgets: true, // hovers and suggestions may overflow the bordered host
    renderLineHighlightOnlyWhenFocus: true,
  };

  // The program's Pulumi packages are not there for TypeScript to resolve, so its semantic
  // checks would mark every import; syntax errors are still shown.
  function quietTypeScript() {
    const ts = monaco.languages.typescript || monaco.typescript;
    for (const defaults of [ts?.typescriptDefaults, ts?.javascriptDefaults]) {
      defaults?.setDiagnosticsOptions?.({ noSemanticValidation: true, noSyntaxValidation: false });
    }
  }

  function createEditor(textarea) {
    const name = textarea.name;
    const doc = docs[name];
    const readOnly = textarea.hasAttribute("readonly");
    const label = textarea.id ? document.querySelector(`label[for="${textarea.id}"]`) : null;
    const host = h("div", { class: "monaco-host", "data-field": name });
    textarea.before(host);
    let editor;
    try {
      const model = monaco.editor.createModel(textarea.value, languageOf(textarea.dataset.language));
      editor = monaco.editor.create(host, { ...EDITOR_OPTIONS, model, readOnly, domReadOnly: readOnly,
        ariaLabel: label ? label.textContent.trim() : name, theme: themeName() });
      doc.attach(model);
    } catch (err) {
      host.remove(); // the textarea stays as it was
      console.warn(`nimbus: no code editor for ${name}`, err);
      return;
    }
    textarea.hidden = true;
    editors[name] = editor;
    label?.addEventListener("click", (e) => {
      e.preventDefault(); // its textarea is hidden
      editor.focus();
    });
    if (!readOnly && !form.hasAttribute("data-readonly")) {
      editor.addCommand(monaco.KeyMod.CtrlCmd | monaco.KeyCode.KeyS, save);
    }
    if (name !== "code") {
      editor.updateOptions({ wordWrap: "on" }); // JSON in a narrow column: wrap, do not scroll sideways
      fitToContent(editor, host);
    }
  }

  // fitToContent grows a JSON editor with its text, between a few lines and a screenful, so
  // a two-line resolver binding does not sit in a tall empty box.
  function fitToContent(editor, host) {
    const fit = () => {
      const px = Math.min(Math.max(editor.getContentHeight(), 64), 448);
      if (host.style.height !== `${px}px`) host.style.height = `${px}px`;
    };
    editor.onDidContentSizeChange(fit);
    fit();
  }

  function setupLanguageSelect() {
    const select = form.querySelector('select[name="language"]');
    select?.addEventListener("change", () => {
      const model = docs.code?.model;
      if (model) monaco.editor.setModelLanguage(model, languageOf(select.value));
    });
  }

  function startEditors() {
    quietTypeScript();
    for (const textarea of form.querySelectorAll("textarea.code")) createEditor(textarea);
    window.nimbusEditors = editors;
    setupLanguageSelect();
    followTheme();
    applyMarkers();
  }

  // ---- Diff page ----

  function startDiff() {
    const original = document.getElementById("diff-original");
    const modified = document.getElementById("diff-modified");
    if (!original || !modified) return;
    const language = languageOf(diffHost.dataset.language);
    let editor;
    try {
      editor = monaco.editor.createDiffEditor(diffHost, { ...EDITOR_OPTIONS, readOnly: true, domReadOnly: true,
        originalEditable: false, renderSideBySide: true, theme: themeName(),
        originalAriaLabel: original.getAttribute("aria-label") || "before",
        modifiedAriaLabel: modified.getAttribute("aria-label") || "after" });
      editor.setModel({
        original: monaco.editor.createModel(original.value, language),
        modified: monaco.editor.createModel(modified.value, language),
      });
    } catch (err) {
      diffHost.replaceChildren(); // the side-by-side textareas stay
      console.warn("nimbus: no diff editor", err);
      return;
    }
    diffHost.closest(".card")?.querySelector(".diff-fallback")?.setAttribute("hidden", "");
    window.nimbusEditors = { diff: editor };
    followTheme();
    summariseDiff(editor);
  }

  // summariseDiff says how many places changed, since identical programs (versions that
  // changed only the schemas) look like an empty diff.
  function summariseDiff(editor) {
    const summary = h("p", { class: "muted diff-summary", role: "status" });
    diffHost.before(summary);
    editor.onDidUpdateDiff(() => {
      const n = editor.getLineChanges()?.length ?? 0;
      summary.textContent = n === 0 ? "The programs are identical." : `${n} ${n === 1 ? "change" : "changes"} in the program.`;
    });
  }

  // ---- Start ----

  if (form) {
    for (const textarea of form.querySelectorAll("textarea.code")) docs[textarea.name] = createDoc(textarea);
    setupTabs();
    setupSaveKey();
    setupProblems();
    window.nimbusStarter(form, docs);
    form.querySelectorAll(".schema-builder[data-schema-for]").forEach((host) => window.nimbusSchemaBuilder(host, docs));
  }
  loadMonaco(() => (form ? startEditors() : startDiff()));
})();
