// Nimbus new-component starter: on the page that makes a component, the program and schemas
// follow the provider and semantic type chosen until the author changes them. editor.js hands
// it the form and the documents holding the texts.
(() => {
  "use strict";

  // setupStarter swaps in the starter of the provider and semantic type chosen, as long as the
  // program and schemas are still the starter the page or the last swap put there: what the
  // author wrote is never replaced.
  function setupStarter(form, docs) {
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

  window.nimbusStarter = setupStarter;
})();
