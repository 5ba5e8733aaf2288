// Nimbus portal behaviour: theme toggle, CSRF header for htmx, copy buttons,
// dismissible flashes, confirmation prompts and flashes for failed htmx requests. Loaded with `defer` on every
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

    if (el.closest("[data-close-dialog]")) {
      var dialog = el.closest("dialog");
      if (dialog) dialog.close();
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
      return;
    }
    markBusy(form);
  }, true);

  // ---- Busy buttons ----

  // A form with data-busy says so on its button the moment it is sent, and cannot be sent
  // twice. A live page may swap in a fresh copy of the form before the answer comes: it is
  // marked busy again.
  var busyActions = {};

  function markBusy(form) {
    var label = form.getAttribute("data-busy");
    if (!label) return;
    busyActions[form.getAttribute("action")] = label;
    form.querySelectorAll("[type=submit]").forEach(function (btn) {
      btn.textContent = label;
      // After this event: the browser builds what the form sends once it returns.
      setTimeout(function () { btn.disabled = true; }, 0);
    });
  }

  // Fresh copies come by a request's swap (afterSwap) or from the page's stream: htmx does not
  // announce a stream message's swap as afterSwap, only as sseMessage.
  function markBusyAgain() {
    document.querySelectorAll("form[data-busy]").forEach(function (form) {
      var label = busyActions[form.getAttribute("action")];
      if (!label) return;
      form.querySelectorAll("[type=submit]").forEach(function (btn) {
        btn.textContent = label;
        btn.disabled = true;
      });
    });
  }
  document.addEventListener("htmx:afterSwap", markBusyAgain);
  document.addEventListener("htmx:sseMessage", markBusyAgain);

  // ---- Live operation page ----

  // The stream of an operation's page sends its last state before it ends. Should the page
  // still show a state that is not an end when the stream closes (a stream cut short, an event
  // lost on its way), it fetches the final state itself. Not when the stream closed because
  // the viewer may no longer follow it: then the page keeps what it showed.
  var ENDED = ["succeeded", "failed", "cancelled", "rejected"];

  document.addEventListener("htmx:sseClose", function (e) {
    var live = document.getElementById("op-live");
    if (!live || (e.detail && e.detail.type === "nodeMissing")) return;
    var closed = document.getElementById("op-closed");
    if (closed && closed.children.length > 0) return;
    var shown = live.querySelector("[data-testid=operation-live]");
    if (shown && ENDED.indexOf(shown.getAttribute("data-status")) >= 0) return;
    fetch(location.pathname, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (resp) {
        if (!resp.ok) throw new Error("status " + resp.status);
        return resp.text();
      })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("op-live");
        if (!fresh) throw new Error("no state in the answer");
        live.innerHTML = fresh.innerHTML;
        if (window.htmx) window.htmx.process(live);
      })
      .catch(function () {
        showError("The operation's final state could not be loaded; reload the page to see it.");
      });
  });

  // ---- Failed htmx requests ----

  // htmx swaps nothing for an error answer (see htmx-config in the layout), so without this a
  // failed click or poll would show nothing at all. One flash at the top of the page says what
  // went wrong; a poll that keeps failing updates it rather than stacking more.
  var MAX_MESSAGE = 200;

  function serverMessage(xhr) {
    var type = xhr.getResponseHeader("Content-Type") || "";
    var text = typeof xhr.responseText === "string" ? xhr.responseText.trim() : "";
    if (type.indexOf("application/json") === 0) {
      try {
        var body = JSON.parse(text);
        text = body && typeof body.error === "string" ? body.error : "";
      } catch (err) {
        text = "";
      }
    } else if (type.indexOf("text/plain") !== 0) {
      text = ""; // an HTML page is no message
    }
    return text && text.length <= MAX_MESSAGE
      ? text
      : "The request failed (status " + xhr.status + ")";
  }

  function showError(message) {
    var main = document.querySelector("main.content");
    if (!main) return;
    var flash = main.querySelector(".flash[data-htmx-error]");
    if (!flash) {
      flash = document.createElement("div");
      flash.className = "flash flash-error";
      flash.setAttribute("role", "alert");
      flash.setAttribute("data-htmx-error", "");
      flash.appendChild(document.createElement("p"));
      var dismiss = document.createElement("button");
      dismiss.type = "button";
      dismiss.setAttribute("data-dismiss", "");
      dismiss.setAttribute("aria-label", "Dismiss");
      dismiss.textContent = "\u00d7";
      flash.appendChild(dismiss);
    }
    flash.querySelector("p").textContent = message;
    main.insertBefore(flash, main.firstChild);
  }

  document.addEventListener("htmx:responseError", function (e) {
    if (e.detail && e.detail.xhr) showError(serverMessage(e.detail.xhr));
  });

  document.addEventListener("htmx:sendError", function () {
    showError("Nimbus could not be reached; check your connection and try again.");
  });

  // Toggles that arrive later (htmx swaps) still need their labels.
  document.addEventListener("htmx:afterSwap", labelToggles);

  // ---- Dialogs ----

  // Content loaded into the dialog's body opens the dialog; closing it empties the body, so a
  // form left half-filled does not come back stale.
  document.addEventListener("htmx:afterSwap", function (e) {
    var target = e.detail && e.detail.target;
    if (!target || target.id !== "dialog-body") return;
    var dialog = target.closest("dialog");
    if (dialog && !dialog.open) dialog.showModal();
    var first = target.querySelector("input:not([type=hidden]), select, textarea");
    if (first) first.focus();
  });
  // A deploy form's inputs that the chosen environment's resolvers fill are not asked for: the
  // field turns read-only (disabled, so not sent), says who fills it, and is no longer marked
  // required. The server renders the state of the environment selected; this follows a change.
  function markResolved(form) {
    var resolves;
    try { resolves = JSON.parse(form.getAttribute("data-resolves") || "{}"); } catch (err) { return; }
    var env = form.querySelector("[name=environment_id]");
    var types = (env && resolves[env.value]) || [];
    form.querySelectorAll("[data-resolver]").forEach(function (field) {
      var resolved = types.indexOf(field.getAttribute("data-resolver")) >= 0;
      field.classList.toggle("is-resolved", resolved);
      field.querySelectorAll("input, select, textarea").forEach(function (el) {
        el.disabled = resolved;
        if (el.type === "text" || el.type === "number" || el.tagName === "TEXTAREA") {
          if (!("placeholder" in el.dataset)) el.dataset.placeholder = resolved ? "" : el.placeholder;
          el.placeholder = resolved ? field.getAttribute("data-filled-by") : el.dataset.placeholder;
        }
      });
      field.querySelectorAll(".resolved-note, .required-mark").forEach(function (el) {
        el.hidden = el.classList.contains("resolved-note") ? !resolved : resolved;
      });
    });
  }
  document.addEventListener("change", function (e) {
    var form = e.target instanceof Element && e.target.closest("form[data-resolves]");
    if (form && e.target.name === "environment_id") markResolved(form);
  });
  document.addEventListener("htmx:afterSwap", function (e) {
    var target = e.detail && e.detail.target;
    if (target) target.querySelectorAll("form[data-resolves]").forEach(markResolved);
  });

  // A select whose options each belong to a value of another select (named by data-scoped-by)
  // offers only the chosen value's; the server checks the pair anyway.
  function scopeOptions(select) {
    var by = document.getElementById(select.getAttribute("data-scoped-by"));
    if (!by) return;
    var first = null;
    select.querySelectorAll("option[data-scope]").forEach(function (o) {
      var match = o.getAttribute("data-scope") === by.value;
      o.hidden = !match;
      o.disabled = !match;
      if (match && !first) first = o;
    });
    var chosen = select.selectedOptions[0];
    if (!chosen || chosen.disabled) select.value = first ? first.value : "";
  }
  document.addEventListener("change", function (e) {
    if (!(e.target instanceof Element) || !e.target.id) return;
    document.querySelectorAll('select[data-scoped-by="' + e.target.id + '"]').forEach(scopeOptions);
  });
  document.querySelectorAll("select[data-scoped-by]").forEach(scopeOptions);

  document.addEventListener("close", function (e) {
    if (e.target instanceof HTMLDialogElement) {
      var body = e.target.querySelector("#dialog-body");
      if (body) body.innerHTML = "";
    }
  }, true);
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", labelToggles);
  }
})();
