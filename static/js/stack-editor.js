// Nimbus stack editor (app/domain/stack, EditorPage): shows the value or expression field that fits
// the source chosen for each input, and shows a slot's program read-only in Monaco when its
// panel is opened. Without JavaScript every field stays visible and the programs stay plain
// text; the form works the same.
(() => {
  "use strict";

  const MONACO_PATH = "/static/vendor/monaco/vs";

  // A wiring select shows the field its choice needs: a value, an expression, or none.
  function showSource(select) {
    const row = select.closest("tr");
    if (!row) return;
    for (const el of row.querySelectorAll("[data-when]")) el.hidden = el.dataset.when !== select.value;
  }

  document.addEventListener("change", (e) => {
    if (e.target.matches?.("select[data-wiring]")) showSource(e.target);
  });

  let monaco = null;
  let loading = null;

  function loadMonaco() {
    if (loading) return loading;
    loading = new Promise((resolve, reject) => {
      const amd = window.require;
      if (typeof amd !== "function" || typeof amd.config !== "function") return reject(new Error("no loader"));
      amd.config({ paths: { vs: MONACO_PATH } });
      amd(["vs/editor/editor.main"], (api) => resolve(api && api.editor ? api : window.monaco), reject);
    });
    return loading;
  }

  const dark = () => document.documentElement.dataset.theme === "dark" ||
    (document.documentElement.dataset.theme !== "light" && !!window.matchMedia?.("(prefers-color-scheme: dark)").matches);

  // showProgram replaces a program's textarea with a read-only editor, once, when its panel
  // is first opened: most programs are never looked at.
  function showProgram(details) {
    const textarea = details.querySelector("textarea.code");
    if (!details.open || !textarea || textarea.hidden) return;
    loadMonaco().then((api) => {
      monaco = api;
      if (textarea.hidden) return;
      const host = document.createElement("div");
      host.className = "monaco-host";
      host.dataset.program = "";
      textarea.before(host);
      monaco.editor.create(host, {
        value: textarea.value, language: textarea.dataset.language === "yaml" ? "yaml" : textarea.dataset.language,
        readOnly: true, domReadOnly: true, automaticLayout: true, minimap: { enabled: false },
        scrollBeyondLastLine: false, fontSize: 13, theme: dark() ? "vs-dark" : "vs",
        ariaLabel: textarea.getAttribute("aria-label") || "Program",
      });
      textarea.hidden = true;
    }, (err) => console.warn("nimbus: the code editor did not load; the program stays plain text", err));
  }

  // toggle does not bubble: listen in the capture phase, which also sees panels htmx swaps in.
  document.addEventListener("toggle", (e) => {
    if (e.target.matches?.("details[data-program]")) showProgram(e.target);
  }, true);
})();
