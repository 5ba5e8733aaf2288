// Nimbus component editor: enhances the editor page (views/components.templ, Editor) and the
// version diff page (Diff). Without JavaScript both stay plain forms and textareas that work.
//
//   - Monaco replaces each code textarea. The textarea stays in the form, hidden and updated on
//     every change, so the htmx post (or a plain submit) carries exactly what the author sees.
//   - Tabs, Ctrl+S / Cmd+S, the problem list and the schema builder work on the textareas
//     until Monaco is up and on its models after, so a missing or broken vendored Monaco
//     costs the highlighting and nothing else.
//   - The schema builder edits the input and output schemas as a table, in step with the JSON.
//
// Loaded with defer after /static/vendor/monaco/vs/loader.js, so htmx (loaded in <head>) and
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

  // ---- Small helpers ----

  // h builds an element. Attributes true/false are present/absent; value and checked are set
  // as properties; children that are strings become text, never markup.
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value == null || value === false) continue;
      if (key === "value" || key === "checked") el[key] = value;
      else el.setAttribute(key, value === true ? "" : String(value));
    }
    el.append(...children.filter((c) => c != null && c !== false));
    return el;
  }

  function debounce(fn, ms) {
    let timer;
    return () => {
      clearTimeout(timer);
      timer = setTimeout(fn, ms);
    };
  }

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

  // ---- New component: the starter follows the provider and semantic type ----

  // setupStarter swaps in the starter of the provider and semantic type chosen, as long as the
  // program and schemas are still the starter the page or the last swap put there: what the
  // author wrote is never replaced.
  function setupStarter() {
    const url = form.dataset.starterUrl;
    if (!url) return;
    const parts = ["code", "input_schema", "output_schema"].filter((p) => docs[p]);
    const texts = () => Object.fromEntries(parts.map((p) => [p, docs[p].get()]));
    let starter = texts();
    const untouched = () => parts.every((p) => docs[p].get() === starter[p]);
    const provider = form.querySelector('select[name="provider"]');
    const type = form.querySelector('select[name="semantic_type"]');
    const swap = async () => {
      if (!untouched()) return;
      const query = new URLSearchParams({ provider: provider.value, semantic_type: type.value });
      let next;
      try {
        const resp = await fetch(`${url}?${query}`, { headers: { Accept: "application/json" } });
        if (!resp.ok) return;
        next = await resp.json();
      } catch {
        return; // the current starter stays
      }
      if (!untouched()) return; // the author typed while it came
      for (const p of parts) docs[p].set(next[p]);
      starter = texts();
    };
    provider?.addEventListener("change", swap);
    type?.addEventListener("change", swap);
  }

  // ---- Schema builder ----

  const TYPES = ["string", "integer", "number", "boolean", "array", "object"];
  // The order keys take in a property the builder rewrites; others follow as they were.
  const KEY_ORDER = ["type", "title", "description", "default", "enum", "minimum", "maximum",
    "minLength", "maxLength", "pattern", "items", "properties", "x-secret"];
  const PROPERTY_NAME = /^[A-Za-z][A-Za-z0-9_]{0,62}$/; // as app/domain/component/schema.go

  const isNumeric = (type) => type === "integer" || type === "number";
  const isScalar = (type) => isNumeric(type) || type === "string" || type === "boolean";

  // toValue turns what was typed into the JSON value the property's type calls for. Text that
  // does not fit stays text, so the server names the problem rather than the form hiding it.
  function toValue(text, type) {
    const t = text.trim();
    if (isNumeric(type)) return t !== "" && Number.isFinite(Number(t)) ? Number(t) : text;
    if (type === "boolean") return t === "true" ? true : t === "false" ? false : text;
    if (type === "array" || type === "object") {
      try {
        return JSON.parse(t);
      } catch {
        return text;
      }
    }
    return text;
  }

  const toText = (value) => (value === undefined ? "" : typeof value === "string" ? value : JSON.stringify(value));
  const fits = (value, type) => typeof value !== "string" || type === "string" || value === "";

  // parseSchema reads the JSON the builder can show: an object whose properties, if any, are
  // objects. Anything else (including JSON that does not parse) is null.
  function parseSchema(text) {
    let schema;
    try {
      schema = text.trim() === "" ? {} : JSON.parse(text);
    } catch {
      return null;
    }
    const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
    if (!isObject(schema)) return null;
    if (schema.properties === undefined) schema.properties = {};
    if (!isObject(schema.properties) || !Object.values(schema.properties).every(isObject)) return null;
    return schema;
  }

  function parseBindings(text) {
    try {
      const b = text.trim() === "" ? {} : JSON.parse(text);
      return b !== null && typeof b === "object" && !Array.isArray(b) ? b : null;
    } catch {
      return null;
    }
  }

  // orderedNames is the server's display order (Schema.Names): x-order first, the rest sorted.
  function orderedNames(schema) {
    const names = Object.keys(schema.properties);
    const order = Array.isArray(schema["x-order"]) ? schema["x-order"] : [];
    const first = order.filter((n, i) => names.includes(n) && order.indexOf(n) === i);
    return first.concat(names.filter((n) => !first.includes(n)).sort());
  }

  function createBuilder(host) {
    const doc = docs[host.dataset.schemaFor];
    if (!doc) return;
    const b = {
      host,
      doc,
      bindings: host.dataset.bindingsFor ? docs[host.dataset.bindingsFor] || null : null,
      inputs: host.dataset.schemaFor === "input_schema" || "bindingsFor" in host.dataset,
      readOnly: host.hasAttribute("data-readonly"),
      resolvers: JSON.parse(host.dataset.resolvers || "[]"), // every type, and type.output
      label: host.dataset.schemaFor === "input_schema" ? "Inputs" : "Outputs",
      schema: null, // what the table shows; null while the JSON does not parse
      names: [],
      written: null, // the texts the builder wrote last, to tell its own changes from others'
      bindingsWritten: null,
    };
    renderBuilder(b);
    // Typing in the JSON re-renders the table once the typing pauses; the builder's own writes
    // need no re-render (and one would take the focus from the field being typed in).
    const rerender = debounce(() => renderBuilder(b), 300);
    doc.onChange(() => doc.get() !== b.written && rerender());
    b.bindings?.onChange(() => b.bindings.get() !== b.bindingsWritten && rerender());
    if (b.readOnly) return;
    host.addEventListener("input", (e) => onBuilderEdit(b, e));
    host.addEventListener("change", (e) => onBuilderEdit(b, e));
    host.addEventListener("click", (e) => onBuilderAction(b, e));
    // Enter in a cell would submit the whole form; in a table it only means "done here".
    host.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && e.target instanceof HTMLInputElement) e.preventDefault();
    });
  }

  function renderBuilder(b, focus) {
    const schema = parseSchema(b.doc.get());
    if (!schema) {
      // Keep the last table in view, greyed out, so the author sees what the form held.
      b.schema = null;
      const fieldset = b.host.querySelector("fieldset");
      if (fieldset) fieldset.disabled = true;
      else b.host.replaceChildren(h("fieldset", { class: "sb", disabled: true }, brokenMessage()));
      if (!b.host.querySelector(".sb-broken")) b.host.querySelector("fieldset").prepend(brokenMessage());
      return;
    }
    focus = focus || focusedControl(b.host);
    b.schema = schema;
    b.names = orderedNames(schema);
    const bindings = b.bindings ? parseBindings(b.bindings.get()) : null;
    const table = h("table", { class: "sb-table", "aria-label": b.label },
      h("thead", {}, h("tr", {}, ...columns(b).map((c) => h("th", { scope: "col" }, c)))),
      ...b.names.map((name, i) => propertyRows(b, name, i, bindings)));
    if (b.names.length === 0) {
      table.append(h("tbody", {}, h("tr", {}, h("td", { class: "sb-empty", colspan: columns(b).length }, "No properties yet."))));
    }
    const add = b.readOnly ? null : h("button", { type: "button", class: "btn btn-small", "data-action": "add" }, "Add property");
    b.host.replaceChildren(h("fieldset", { class: "sb" }, h("legend", { class: "visually-hidden" }, b.label), table, add));
    restoreFocus(b.host, focus);
  }

  function brokenMessage() {
    return h("p", { class: "sb-broken", role: "status" }, "Fix the JSON to use the form");
  }

  function columns(b) {
    const cols = ["Name", "Type", "Default"];
    if (b.inputs) cols.push("Required");
    if (b.bindings) cols.push("Resolver");
    if (!b.readOnly) cols.push(h("span", { class: "visually-hidden" }, "Actions"));
    return cols;
  }

  // propertyRows renders one property as a tbody of two rows: the main columns, and its
  // details (description and constraints) below, which would not fit across.
  function propertyRows(b, name, index, bindings) {
    const p = b.schema.properties[name];
    const type = p.type || "";
    const required = Array.isArray(b.schema.required) && b.schema.required.includes(name);
    const main = [
      cell(b, name, "name", name, { class: "mono", size: 12 }),
      h("td", {}, b.readOnly ? type : typeSelect(name, type)),
      cell(b, name, "default", defaultControl(b, name, p)),
    ];
    if (b.inputs) main.push(checkCell(b, name, "required", required));
    if (b.bindings) main.push(h("td", {}, resolverControl(b, name, bindings)));
    if (!b.readOnly) main.push(h("td", { class: "sb-actions" }, ...actionButtons(b, name, index)));

    const details = [detail(b, name, "description", "Description", p.description, "sb-wide")];
    // Read-only, the allowed values are quoted, so that an empty string among them shows.
    const allowed = (p.enum || []).map(b.readOnly ? (v) => JSON.stringify(v) : toText).join(", ");
    if (isScalar(type) || p.enum) details.push(detail(b, name, "enum", "Allowed values", allowed, "", "comma-separated"));
    if (isNumeric(type) || p.minimum !== undefined || p.maximum !== undefined) {
      details.push(detail(b, name, "minimum", "Min", toText(p.minimum)), detail(b, name, "maximum", "Max", toText(p.maximum)));
    }
    if (type === "string" || p.pattern !== undefined) details.push(detail(b, name, "pattern", "Pattern", p.pattern, "sb-pattern"));
    // Secret sits with the details: the main row has no room across, and it is rarely set.
    if (b.inputs) details.push(secretDetail(b, name, p["x-secret"] === true));
    const shown = details.filter(Boolean);
    return h("tbody", { "data-name": name },
      h("tr", { class: "sb-main" }, ...main),
      shown.length ? h("tr", { class: "sb-details" }, h("td", { colspan: columns(b).length }, h("div", { class: "sb-detail-list" }, ...shown))) : null);
  }

  const labelFor = (key, name) => `${{ name: "Name", default: "Default", required: "Required", "x-secret": "Secret",
    resolver: "Resolver", type: "Type", description: "Description", enum: "Allowed values", minimum: "Minimum",
    maximum: "Maximum", pattern: "Pattern" }[key] || key} of ${name}`;

  // cell is a text input for key, or in a read-only builder the value as text. content may be
  // a ready control (see defaultControl).
  function cell(b, name, key, content, attrs) {
    if (content instanceof Element) return h("td", {}, content);
    if (b.readOnly) return h("td", { class: attrs?.class }, content === "" ? "—" : content);
    return h("td", {}, textInput(name, key, content, attrs));
  }

  function textInput(name, key, value, attrs) {
    return h("input", { type: "text", value: value ?? "", "data-key": key, "aria-label": labelFor(key, name),
      autocomplete: "off", spellcheck: "false", ...attrs });
  }

  function checkCell(b, name, key, checked) {
    if (b.readOnly) return h("td", { class: "sb-check" }, checked ? "yes" : "");
    return h("td", { class: "sb-check" }, h("input", { type: "checkbox", checked, "data-key": key, "aria-label": labelFor(key, name) }));
  }

  function secretDetail(b, name, secret) {
    if (b.readOnly) return secret ? h("span", { class: "sb-detail" }, "Secret") : null;
    return h("label", { class: "sb-detail" },
      h("input", { type: "checkbox", checked: secret, "data-key": "x-secret", "aria-label": labelFor("x-secret", name) }),
      h("span", {}, "Secret"));
  }

  function typeSelect(name, type) {
    const known = TYPES.includes(type) ? TYPES : [type, ...TYPES];
    return h("select", { "data-key": "type", "aria-label": labelFor("type", name) },
      ...known.map((t) => h("option", { value: t, selected: t === type }, t || "(none)")));
  }

  function defaultControl(b, name, p) {
    const text = toText(p.default);
    if (b.readOnly) return text === "" && p.default !== "" ? "—" : p.default === "" ? '""' : text;
    if (p.type === "boolean" && (p.default === undefined || typeof p.default === "boolean")) {
      return h("select", { "data-key": "default", "aria-label": labelFor("default", name) },
        ...["", "true", "false"].map((v) => h("option", { value: v, selected: v === text }, v || "none")));
    }
    return textInput(name, "default", text, { size: 8, "aria-invalid": fits(p.default, p.type) ? false : "true" });
  }

  function resolverControl(b, name, bindings) {
    const current = bindings?.[name] || "";
    if (b.readOnly) return current || "—";
    const known = b.resolvers;
    const choices = current && !known.includes(current) ? [current, ...known] : known;
    return h("select", { "data-key": "resolver", "aria-label": labelFor("resolver", name), disabled: !bindings,
      title: bindings ? null : "Fix the resolver bindings JSON to choose here" },
      h("option", { value: "" }, "none"),
      ...choices.map((r) => h("option", { value: r, selected: r === current }, r)));
  }

  // detail is one labelled field of the details row; read-only, it is shown only when set.
  function detail(b, name, key, label, value, cls, placeholder) {
    const text = value ?? "";
    if (b.readOnly) return text === "" ? null : h("span", { class: `sb-detail ${cls || ""}`.trim() }, h("span", { class: "muted" }, `${label}:`), text);
    const input = textInput(name, key, text, { placeholder });
    if (key === "minimum" || key === "maximum") input.setAttribute("inputmode", "decimal");
    return h("label", { class: `sb-detail ${cls || ""}`.trim() }, h("span", {}, label), input);
  }

  function actionButtons(b, name, index) {
    const button = (action, text, label, disabled) =>
      h("button", { type: "button", class: "sb-icon", "data-action": action, "aria-label": `${label} ${name}`, title: `${label} ${name}`, disabled }, text);
    return [
      button("up", "↑", "Move up", index === 0),
      button("down", "↓", "Move down", index === b.names.length - 1),
      button("remove", "✕", "Remove"),
    ];
  }

  // focusedControl remembers which control of which property has the focus, so a re-render
  // can put it back (by property name, so it follows a row that moved).
  function focusedControl(host) {
    const el = document.activeElement;
    if (!el || !host.contains(el)) return null;
    return { name: el.closest("tbody[data-name]")?.dataset.name, key: el.dataset.key, action: el.dataset.action,
      start: el.selectionStart, end: el.selectionEnd };
  }

  function restoreFocus(host, f) {
    if (!f) return;
    const row = f.name != null ? host.querySelector(`tbody[data-name="${CSS.escape(f.name)}"]`) : host;
    let el = row && (f.key ? row.querySelector(`[data-key="${f.key}"]`) : row.querySelector(`[data-action="${f.action}"]`));
    if (el && el.disabled) el = row.querySelector("[data-action]:not(:disabled)");
    el = el || host.querySelector('[data-action="add"]');
    if (!el) return;
    el.focus();
    if (f.start != null && typeof el.setSelectionRange === "function" && el.type === "text") el.setSelectionRange(f.start, f.end);
  }

  function onBuilderEdit(b, e) {
    const el = e.target;
    if (!b.schema || !el.dataset?.key) return;
    // Text fields apply as they are typed in; checkboxes and selects when they change (they
    // fire input too, which would apply them twice).
    const onChangeOnly = el.type === "checkbox" || el.tagName === "SELECT";
    if ((e.type === "change") !== onChangeOnly) return;
    const row = el.closest("tbody[data-name]");
    const name = row.dataset.name;
    const value = el.type === "checkbox" ? el.checked : el.value;
    switch (el.dataset.key) {
      case "name":
        renameProperty(b, row, el);
        return;
      case "required":
        setRequired(b.schema, name, value);
        break;
      case "resolver":
        setBinding(b, name, value);
        return;
      case "type":
        changeType(b.schema.properties[name], value);
        writeSchema(b);
        renderBuilder(b); // the controls that fit the new type differ
        return;
      default: {
        const p = b.schema.properties[name];
        setKey(p, el.dataset.key, value);
        b.schema.properties[name] = canonical(p);
        if (el.dataset.key === "default") el.setAttribute("aria-invalid", String(!fits(p.default, p.type)));
      }
    }
    writeSchema(b);
  }

  // setKey applies one edited field to a property; an empty field drops its key.
  function setKey(p, key, value) {
    if (key === "x-secret") {
      if (value) p["x-secret"] = true;
      else delete p["x-secret"];
      return;
    }
    if (value === "") {
      delete p[key];
      return;
    }
    if (key === "default") p.default = toValue(value, p.type);
    else if (key === "enum") p.enum = value.split(",").map((v) => toValue(v.trim(), p.type));
    else if (key === "minimum" || key === "maximum") p[key] = toValue(value, "number");
    else p[key] = value;
  }

  // changeType converts the default and allowed values to the new type, and drops the
  // constraints the server accepts only for other types.
  function changeType(p, type) {
    p.type = type;
    if (p.default !== undefined) p.default = toValue(toText(p.default), type);
    if (Array.isArray(p.enum)) {
      if (isScalar(type)) p.enum = p.enum.map((v) => toValue(toText(v), type));
      else delete p.enum;
    }
    if (!isNumeric(type)) {
      delete p.minimum;
      delete p.maximum;
    }
    if (type !== "string") {
      delete p.pattern;
      delete p.minLength;
      delete p.maxLength;
    }
    if (type === "array" && !p.items) p.items = { type: "string" };
  }

  function canonical(p) {
    const out = {};
    for (const key of KEY_ORDER) if (key in p) out[key] = p[key];
    for (const key of Object.keys(p)) if (!(key in out)) out[key] = p[key];
    return out;
  }

  function setRequired(schema, name, on) {
    const list = (Array.isArray(schema.required) ? schema.required : []).filter((n) => n !== name);
    if (on) list.push(name);
    if (list.length) schema.required = list;
    else delete schema.required;
  }

  // renameProperty renames as the author types; a name that is not valid, or taken, is marked
  // and not applied until it is fixed.
  function renameProperty(b, row, input) {
    const from = row.dataset.name;
    const to = input.value.trim();
    let problem = "";
    if (!PROPERTY_NAME.test(to)) problem = "Start with a letter; use only letters, digits and _ (at most 63)";
    else if (to !== from && to in b.schema.properties) problem = `There is already a property named ${to}`;
    input.setAttribute("aria-invalid", String(problem !== ""));
    input.title = problem;
    if (problem || to === from) return;
    const s = b.schema;
    s.properties = Object.fromEntries(Object.entries(s.properties).map(([k, v]) => [k === from ? to : k, v]));
    if (Array.isArray(s.required)) s.required = s.required.map((n) => (n === from ? to : n));
    if (Array.isArray(s["x-order"])) s["x-order"] = s["x-order"].map((n) => (n === from ? to : n));
    b.names = b.names.map((n) => (n === from ? to : n));
    row.dataset.name = to;
    for (const el of row.querySelectorAll("[data-key]")) el.setAttribute("aria-label", labelFor(el.dataset.key, to));
    for (const el of row.querySelectorAll("[data-action]")) {
      el.setAttribute("aria-label", el.getAttribute("aria-label").replace(from, to));
      el.title = el.getAttribute("aria-label");
    }
    writeSchema(b);
    renameBinding(b, from, to);
  }

  function onBuilderAction(b, e) {
    const button = e.target.closest("[data-action]");
    if (!button || !b.schema) return;
    const s = b.schema;
    const name = button.closest("tbody[data-name]")?.dataset.name;
    const i = b.names.indexOf(name);
    let focus = { name, action: button.dataset.action };
    switch (button.dataset.action) {
      case "up":
      case "down": {
        const j = button.dataset.action === "up" ? i - 1 : i + 1;
        if (j < 0 || j >= b.names.length) return;
        [b.names[i], b.names[j]] = [b.names[j], b.names[i]];
        break;
      }
      case "remove":
        delete s.properties[name];
        setRequired(s, name, false);
        b.names.splice(i, 1);
        setBinding(b, name, "");
        focus = { name: b.names[Math.min(i, b.names.length - 1)], action: "remove" };
        break;
      case "add": {
        let added = "new_property";
        for (let n = 2; added in s.properties; n++) added = `new_property_${n}`;
        s.properties[added] = { type: "string" };
        b.names.push(added);
        focus = { name: added, key: "name", start: 0, end: added.length };
        break;
      }
      default:
        return;
    }
    // The order is now the author's: write it down, or the server would sort the rest.
    s["x-order"] = b.names.slice();
    writeSchema(b);
    renderBuilder(b, focus);
  }

  function writeSchema(b) {
    if (Array.isArray(b.schema["x-order"])) {
      b.schema["x-order"] = b.names.filter((n) => n in b.schema.properties);
    }
    b.written = JSON.stringify(b.schema, null, 2);
    b.doc.set(b.written);
  }

  function editBindings(b, edit) {
    if (!b.bindings) return;
    const bindings = parseBindings(b.bindings.get());
    if (!bindings) return; // the select is disabled then; the JSON is the author's to fix
    edit(bindings);
    b.bindingsWritten = JSON.stringify(bindings, null, 2);
    b.bindings.set(b.bindingsWritten);
  }

  function setBinding(b, name, resolver) {
    editBindings(b, (bindings) => {
      if (resolver) bindings[name] = resolver;
      else delete bindings[name];
    });
  }

  function renameBinding(b, from, to) {
    editBindings(b, (bindings) => {
      if (!(from in bindings)) return;
      const entries = Object.entries(bindings).map(([k, v]) => [k === from ? to : k, v]);
      for (const k of Object.keys(bindings)) delete bindings[k];
      Object.assign(bindings, Object.fromEntries(entries));
    });
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
    setupStarter();
    form.querySelectorAll(".schema-builder[data-schema-for]").forEach(createBuilder);
  }
  loadMonaco(() => (form ? startEditors() : startDiff()));
})();
