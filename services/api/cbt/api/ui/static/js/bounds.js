// The model page's bounds dialog (external models): shows the cached raw bounds [min, max), sets them (PUT) or
// deletes them and asks for a rescan (DELETE) at /api/v1/models/{id}/bounds, with the bearer token kept in this tab's
// sessionStorage. An invalid edit comes back as a 400 whose reason the dialog shows.

import { getJSON, modelPath, problemBox, sendJSON, token } from "./api.js";
import { byId, h } from "./dom.js";

/** A whole number from an input, or the text as typed (the API says why it is refused). */
function position(input) {
  const text = input.value.trim();
  return /^\d+$/.test(text) ? Number(text) : text;
}

export function boundsDialog({ modelId, onDone }) {
  const dialog = byId("bounds-dialog");
  const form = byId("bounds-form");
  const state = byId("bounds-state");
  const result = byId("bounds-result");
  const path = modelPath(modelId, "/bounds");
  dialog.querySelectorAll("[data-close]").forEach((b) => b.addEventListener("click", () => dialog.close()));
  form.addEventListener("submit", (event) => event.preventDefault());

  function showStored(stored) {
    state.textContent = stored && stored.min !== null && stored.min !== undefined
      ? `Cached now: [${stored.min}, ${stored.max})` : "No bounds cached (not scanned yet).";
  }

  async function load() {
    try {
      const list = await getJSON("/bounds");
      const stored = (list.bounds || []).find((b) => b.model === modelId);
      showStored(stored);
      if (stored && stored.min !== null) {
        form.elements.min.value = String(stored.min);
        form.elements.max.value = String(stored.max);
      }
    } catch (error) {
      result.replaceChildren(problemBox(error));
    }
  }

  async function run(method) {
    result.replaceChildren();
    const secret = form.elements.token.value.trim();
    token.set(secret);
    const body = method === "PUT" ? { min: position(form.elements.min), max: position(form.elements.max) } : undefined;
    try {
      const answer = await sendJSON(method, path, body, secret);
      const text = method === "PUT"
        ? `Bounds set to [${answer.min}, ${answer.max}): dependents are planned with them; the next scan starts from them.`
        : "Bounds deleted: the bounds-cache scans this source at its next round.";
      result.replaceChildren(h("div", { class: "ok", role: "status" }, text));
      showStored(method === "PUT" ? answer : null);
      onDone?.();
    } catch (error) {
      result.replaceChildren(problemBox(error));
    }
  }

  byId("bounds-save").addEventListener("click", () => run("PUT"));
  byId("bounds-delete").addEventListener("click", () => run("DELETE"));
  return {
    open() {
      result.replaceChildren();
      form.elements.token.value = token.get();
      dialog.showModal();
      load();
    },
  };
}
