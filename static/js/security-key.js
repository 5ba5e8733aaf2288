// Security keys (WebAuthn): adding one on the account page, and signing in with one at the
// second step. Nimbus sends the options of the browser's call as JSON, with the binary fields
// in base64url, and takes the browser's answer back the same way.
(function () {
  "use strict";

  function toBytes(s) {
    s = s.replace(/-/g, "+").replace(/_/g, "/");
    while (s.length % 4) s += "=";
    var bin = atob(s), out = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out.buffer;
  }

  function toText(buf) {
    var b = new Uint8Array(buf), s = "";
    for (var i = 0; i < b.length; i++) s += String.fromCharCode(b[i]);
    return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  function post(url, body) {
    var meta = document.querySelector('meta[name="csrf-token"]');
    return fetch(url, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": meta ? meta.content : "" },
      body: JSON.stringify(body || {})
    }).then(function (r) {
      if (r.status === 204) return {};
      return r.json().catch(function () { return {}; }).then(function (j) {
        if (!r.ok) {
          var msgs = Object.keys(j).map(function (k) { return j[k]; });
          throw new Error(msgs.length ? msgs.join(" ") : "Nimbus answered " + r.status + ": reload the page and try again");
        }
        return j;
      });
    });
  }

  function descriptors(list) {
    (list || []).forEach(function (c) { c.id = toBytes(c.id); });
  }

  function add() {
    var name = document.getElementById("f-key-name").value;
    return post("/account/security-keys/begin").then(function (opts) {
      var pk = opts.publicKey;
      pk.challenge = toBytes(pk.challenge);
      pk.user.id = toBytes(pk.user.id);
      descriptors(pk.excludeCredentials);
      return navigator.credentials.create({ publicKey: pk });
    }).then(function (cred) {
      return post("/account/security-keys/finish?name=" + encodeURIComponent(name), {
        id: cred.id, rawId: toText(cred.rawId), type: cred.type,
        response: { attestationObject: toText(cred.response.attestationObject), clientDataJSON: toText(cred.response.clientDataJSON) }
      });
    }).then(function () { location.reload(); });
  }

  function signIn(next) {
    return post("/login/second-factor/key/begin").then(function (opts) {
      var pk = opts.publicKey;
      pk.challenge = toBytes(pk.challenge);
      descriptors(pk.allowCredentials);
      return navigator.credentials.get({ publicKey: pk });
    }).then(function (a) {
      var response = { authenticatorData: toText(a.response.authenticatorData), clientDataJSON: toText(a.response.clientDataJSON),
        signature: toText(a.response.signature) };
      if (a.response.userHandle) response.userHandle = toText(a.response.userHandle);
      return post("/login/second-factor/key/finish?next=" + encodeURIComponent(next), { id: a.id, rawId: toText(a.rawId), type: a.type, response: response });
    }).then(function (j) { location.assign(j.next); });
  }

  document.addEventListener("click", function (e) {
    var button = e.target.closest("[data-security-key]");
    if (!button) return;
    e.preventDefault();
    var status = document.querySelector('[data-testid="key-status"]');
    status.textContent = "";
    var done = button.dataset.securityKey === "register" ? add() : signIn(button.dataset.next || "/");
    done.catch(function (err) { status.textContent = err.message; });
  });
})();
