// The model page's "Live overrides" dialog: shows the model's live config override and the fields in force, sets one
// (a JSON object: enabled, schedules, limits, fill, tags; or enabled, schedule, tags for a scheduled model) or clears
// it. PUT and DELETE /api/v1/models/{id}/overrides need the bearer token (kept in this tab's sessionStorage); an
// invalid override comes back as a 400 whose reason is shown in the dialog. The coordinators apply it at their next tick.

import { ApiError, getJSON, modelPath, problemBox, sendJSON, token } from "./api.js";
import { byId, h } from "./dom.js";

function effectiveTable(effective) {
  const rows = Object.entries(effective || {}).map(([name, value]) =>
    h("tr", {}, h("th", {}, name), h("td", { class: "mono" }, JSON.stringify(value))));
  return h("table", { class: "table compact", "data-effective": "true" }, h("tbody", {}, ...rows));
}

function setup() {
  const root = byId("model-root");
  const open = byId("overrides-open");
  const dialog = byId("overrides-dialog");
  if (!root || !open || !dialog) return;
  const modelId = root.dataset.modelId;
  const form = byId("overrides-form");
  const fields = form.elements.fields;
  const state = byId("overrides-state");
  const result = byId("overrides-result");
  const path = modelPath(modelId, "/overrides");
  dialog.querySelectorAll("[data-close]").forEach((b) => b.addEventListener("click", () => dialog.close()));
  form.addEventListener("submit", (event) => event.preventDefault());

  function show(shown) {
    fields.value = shown.override ? JSON.stringify(shown.override, null, 2) : "";
    state.replaceChildren(
      h("div", { class: "muted small" }, shown.override ? "Override in force; the fields now:" : "No override: the config's fields:"),
      effectiveTable(shown.effective));
  }

  async function load() {
    result.replaceChildren();
    try {
      show(await getJSON(path));
    } catch (error) {
      result.replaceChildren(problemBox(error));
    }
  }

  async function run(method) {
    result.replaceChildren();
    let body;
    if (method === "PUT") {
      try {
        body = JSON.parse(fields.value || "{}");
      } catch (error) {
        result.replaceChildren(problemBox(new ApiError(400, { title: "Not JSON", detail: String(error.message || error) })));
        return;
      }
    }
    token.set(form.elements.token.value);
    try {
      const shown = await sendJSON(method, path, body, form.elements.token.value);
      show(shown);
      result.replaceChildren(h("div", { class: "ok", role: "status" },
        method === "PUT" ? "Override set: the coordinators apply it at their next tick." : "Override cleared: the config applies again at the next tick."));
    } catch (error) {
      result.replaceChildren(problemBox(error));
    }
  }

  byId("overrides-save").addEventListener("click", () => run("PUT"));
  byId("overrides-clear").addEventListener("click", () => run("DELETE"));
  open.addEventListener("click", () => {
    form.elements.token.value = token.get();
    dialog.showModal();
    load();
  });
}

setup();
