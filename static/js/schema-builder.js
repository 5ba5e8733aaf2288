// Nimbus schema builder: edits a component's input and output schemas (and the inputs'
// resolver bindings) as a table, in step with their JSON. The editor (editor.js) hands it each
// .schema-builder element and the documents holding the texts; the JSON stays the truth, so a
// table that cannot follow (the JSON does not parse) greys out and the text still saves.
(() => {
  "use strict";

  const { h, debounce } = window.nimbusDOM;


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

  function createBuilder(host, docs) {
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

  window.nimbusSchemaBuilder = createBuilder;
})();
