// Nimbus page helpers the editor's scripts share (editor.js, schema-builder.js): loaded first,
// with defer, so both find them on window.nimbusDOM.
(() => {
  "use strict";


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

  window.nimbusDOM = { h, debounce };
})();
