// Nimbus portal behaviour: theme toggle, CSRF header for htmx, copy buttons,
// dismissible flashes and confirmation prompts. Loaded with `defer` on every
// page; all handlers are delegated from document so they keep working for
// content that htmx swaps in later.
(function () {
  "use strict";

  var THEME_KEY = "nimbus-theme";
  var root = document.documentElement;

  // ---- Theme ----

  function storedTheme() {
    try {
      var t = window.localStorage.getItem(THEME_KEY);
      return t === "light" || t === "dark" ? t : null;
    } catch (e) {
      return null; // storage disabled (private mode, strict settings)
    }
  }

  function systemTheme() {
    return window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches
      ? "dark"
      : "light";
  }

  function currentTheme() {
    var t = root.dataset.theme;
    return t === "light" || t === "dark" ? t : systemTheme();
  }

  function labelToggles() {
    var next = currentTheme() === "dark" ? "light" : "dark";
    var label = "Switch to " + next + " theme";
    document.querySelectorAll(".theme-toggle").forEach(function (btn) {
      btn.setAttribute("aria-label", label);
      btn.setAttribute("title", label);
    });
  }

  function applyTheme(theme) {
    if (theme) {
      root.dataset.theme = theme;
    } else {
      delete root.dataset.theme; // follow the system preference
    }
    labelToggles();
  }

  // Apply the saved choice before anything else runs.
  applyTheme(storedTheme());

  function toggleTheme() {
    var next = currentTheme() === "dark" ? "light" : "dark";
    try {
      window.localStorage.setItem(THEME_KEY, next);
    } catch (e) {
      // Not persisted; the change still applies to this page.
    }
    applyTheme(next);
  }

  // Keep other open tabs in step with a change made here.
  window.addEventListener("storage", function (e) {
    if (e.key === THEME_KEY) applyTheme(storedTheme());
  });

  if (window.matchMedia) {
    var mq = window.matchMedia("(prefers-color-scheme: dark)");
    if (mq.addEventListener) mq.addEventListener("change", labelToggles);
  }

  // ---- CSRF token for htmx requests ----

  function csrfToken() {
    var meta = document.querySelector('meta[name="csrf-token"]');
    return meta ? meta.getAttribute("content") || "" : "";
  }

  document.addEventListener("htmx:configRequest", function (e) {
    var token = csrfToken();
    if (token && e.detail && e.detail.headers) {
      e.detail.headers["X-CSRF-Token"] = token;
    }
  });

  // ---- Copy to clipboard ----

  function fallbackCopy(text) {
    // navigator.clipboard needs a secure context; plain-HTTP installs on a
    // LAN fall back to a hidden textarea and execCommand.
    var ta = document.createElement("textarea");
    ta.value = text;
    ta.setAttribute("readonly", "");
    ta.style.position = "fixed";
    ta.style.top = "-1000px";
    ta.style.opacity = "0";
    document.body.appendChild(ta);
    ta.select();
    var ok = false;
    try {
      ok = document.execCommand("copy");
    } catch (err) {
      ok = false;
    }
    document.body.removeChild(ta);
    return ok ? Promise.resolve() : Promise.reject(new Error("copy failed"));
  }

  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text).catch(function () {
        return fallbackCopy(text);
      });
    }
    return fallbackCopy(text);
  }

  function flashButton(btn, text, copied) {
    if (!btn.dataset.label) btn.dataset.label = btn.textContent;
    btn.textContent = text;
    if (copied) btn.setAttribute("data-copied", "");
    clearTimeout(btn._nimbusTimer);
    btn._nimbusTimer = setTimeout(function () {
      btn.textContent = btn.dataset.label;
      btn.removeAttribute("data-copied");
    }, 2000);
  }

  function handleCopy(btn) {
    var sel = btn.getAttribute("data-copy-target");
    var target = null;
    try {
      target = sel ? document.querySelector(sel) : null;
    } catch (e) {
      target = null; // invalid selector
    }
    if (!target) return;
    var text = "value" in target && typeof target.value === "string"
      ? target.value
      : target.textContent;
    copyText(text.trim()).then(
      function () { flashButton(btn, "Copied", true); },
      function () { flashButton(btn, "Copy failed", false); }
    );
  }

  // ---- Delegated clicks ----

  document.addEventListener("click", function (e) {
    var el = e.target instanceof Element ? e.target : null;
    if (!el) return;

    var toggle = el.closest(".theme-toggle");
    if (toggle) {
      e.preventDefault();
      toggleTheme();
      return;
    }

    var copy = el.closest(".copy-btn[data-copy-target]");
    if (copy) {
      e.preventDefault();
      handleCopy(copy);
      return;
    }

    var dismiss = el.closest(".flash [data-dismiss]");
    if (dismiss) {
      e.preventDefault();
      var flash = dismiss.closest(".flash");
      if (flash) flash.remove();
    }
  });

  // ---- Confirmation before submit ----

  // Capture phase on document runs before htmx's own submit listener on the
  // form, so stopping here prevents both normal and htmx submissions. A
  // data-confirm on the submit button takes precedence over the form's.
  document.addEventListener("submit", function (e) {
    var form = e.target;
    if (!(form instanceof HTMLFormElement)) return;
    var submitter = e.submitter;
    var message =
      (submitter && submitter.getAttribute("data-confirm")) ||
      form.getAttribute("data-confirm");
    if (message && !window.confirm(message)) {
      e.preventDefault();
      e.stopPropagation();
    }
  }, true);

  // Toggles that arrive later (htmx swaps) still need their labels.
  document.addEventListener("htmx:afterSwap", labelToggles);
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", labelToggles);
  }
})();
