// Applies the stored theme before the first paint, so dark pages never flash light. Loaded
// without defer in <head>; app.js handles the toggle.
(function () {
  try {
    var t = window.localStorage.getItem("nimbus-theme");
    if (t === "light" || t === "dark") document.documentElement.dataset.theme = t;
  } catch (e) {
    // Storage unavailable: the system preference applies.
  }
})();
