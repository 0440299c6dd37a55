// Operator actions on the model page: rerun a range (preview, then confirm), skip a range (or stop skipping it), run
// a scheduled model now, refresh an external model's bounds. Each asks for the bearer token (kept in sessionStorage, i.e. this tab only) and shows
// the API's problem details (401 wrong token, 403 mutations disabled, 4xx bad range) in the dialog.

import { modelPath, postJSON, problemBox, token } from "./api.js";
import { byId, h, modelLink, table } from "./dom.js";
import { formatNumber, formatRange } from "./format.js";

function dialogParts(id) {
  const dialog = byId(id);
  dialog.querySelectorAll("[data-close]").forEach((b) => b.addEventListener("click", () => dialog.close()));
  // Enter in a field must not submit (and close) the dialog: each step has its own button.
  dialog.querySelector("form").addEventListener("submit", (event) => event.preventDefault());
  return dialog;
}

/** The models a rerun touches: the rerun model first, then its dependents by name; one line per range. */
function affectedTable(affected, isTime, modelId) {
  const rows = Object.entries(affected || {})
    .sort(([a], [b]) => (b === modelId) - (a === modelId) || a.localeCompare(b));
  if (!rows.length) return h("div", { class: "empty" }, "Nothing is covered in this range: no interval would change.");
  return h("div", { class: "affected" }, table([
    { label: "Model", cell: ([id]) => modelLink(id) },
    { label: "Ranges removed from coverage", cell: ([, ranges]) => ranges.map(([s, e]) => h("div", {}, formatRange(s, e, isTime))) },
  ], rows, { "data-affected": "true" }));
}

/** Reads the form's range; returns a message when it is not a valid half-open range. */
function readRange(form) {
  const start = Number(form.elements.start.value);
  const end = Number(form.elements.end.value);
  if (form.elements.start.value === "" || form.elements.end.value === "") return { error: "Enter a start and an end position." };
  if (!Number.isInteger(start) || !Number.isInteger(end) || start < 0) return { error: "Positions are non-negative integers." };
  if (end <= start) return { error: "The end must be greater than the start (ranges are half-open: [start, end))." };
  return { start, end };
}

/** A range dialog as it opens: defaults, the tab's token, the range when one is given, no result yet. */
function resetRangeForm(form, result, range) {
  form.reset();
  form.elements.token.value = token.get();
  if (range) {
    form.elements.start.value = range[0];
    form.elements.end.value = range[1];
  }
  result.replaceChildren();
}

function localProblem(text) {
  return h("div", { class: "problem", role: "alert" }, h("span", { class: "problem-title" }, text));
}

/** The rerun dialog; returns open([start, end]). onDone(response) runs after a confirmed rerun. */
export function rerunDialog({ modelId, isTime, onDone }) {
  const dialog = dialogParts("rerun-dialog");
  const form = byId("rerun-form");
  const result = byId("rerun-result");
  const label = byId("rerun-range-label");
  const preview = byId("rerun-preview");
  const confirm = byId("rerun-confirm");
  let previewed = null;

  const body = (isPreview) => {
    const range = readRange(form);
    if (range.error) return range;
    return { start: range.start, end: range.end, cascade: form.elements.cascade.checked,
      reason: form.elements.reason.value.trim() || "manual", preview: isPreview };
  };
  const changed = () => {
    previewed = null;
    confirm.disabled = true;
    const range = readRange(form);
    label.textContent = range.error ? "" : `${formatRange(range.start, range.end, isTime)} (${formatNumber(range.end - range.start)} positions)`;
  };
  form.addEventListener("input", changed);

  const send = async (isPreview) => {
    const request = isPreview ? body(true) : { ...previewed, preview: false };
    if (request.error) { result.replaceChildren(localProblem(request.error)); return null; }
    const secret = form.elements.token.value.trim();
    token.set(secret);
    try {
      return { request, response: await postJSON(modelPath(modelId, "/rerun"), request, secret) };
    } catch (error) {
      result.replaceChildren(problemBox(error));
      if (error.status === 401) form.elements.token.focus();
      return null;
    }
  };

  preview.addEventListener("click", async () => {
    preview.disabled = true;
    const sent = await send(true);
    preview.disabled = false;
    if (!sent) return;
    previewed = sent.request;
    const { response } = sent;
    result.replaceChildren(h("div", { class: "preview", "data-intervals": response.intervals ?? "" },
      h("div", {}, h("b", {}, `${formatNumber(response.intervals ?? 0)} intervals`),
        ` in ${Object.keys(response.affected || {}).length} model(s) would run again:`),
      affectedTable(response.affected, isTime, modelId)));
    confirm.disabled = false;
  });

  confirm.addEventListener("click", async () => {
    if (!previewed) return;
    confirm.disabled = true;
    const sent = await send(false);
    if (!sent) { confirm.disabled = false; return; }
    const { response } = sent;
    previewed = null;
    result.replaceChildren(h("div", { class: "success-box", role: "status", "data-invalidation": response.id ?? "" },
      h("b", {}, "Rerun accepted. "),
      `${formatNumber(response.intervals ?? 0)} intervals are being re-run (invalidation ${response.id ?? "?"}).`));
    onDone?.(response);
  });

  return {
    open(range) {
      resetRangeForm(form, result, range);
      changed();
      dialog.showModal();
      (form.elements.token.value ? preview : form.elements.token).focus();
    },
  };
}

/** The skip dialog; returns open([start, end]). onDone(response) runs after a change ({model, skipped}). */
export function skipDialog({ modelId, isTime, onDone }) {
  const dialog = dialogParts("skip-dialog");
  const form = byId("skip-form");
  const result = byId("skip-result");
  const send = async (path, button) => {
    const range = readRange(form);
    if (range.error) { result.replaceChildren(localProblem(range.error)); return; }
    const secret = form.elements.token.value.trim();
    token.set(secret);
    button.disabled = true;
    try {
      const response = await postJSON(modelPath(modelId, path), { start: range.start, end: range.end,
        reason: form.elements.reason.value.trim() || "manual" }, secret);
      const ranges = response.skipped || [];
      result.replaceChildren(h("div", { class: "success-box", role: "status", "data-skipped": JSON.stringify(ranges) },
        ranges.length ? `Skipped now: ${ranges.map(([s, e]) => formatRange(s, e, isTime)).join(", ")}.`
          : "Nothing of this model is skipped now."));
      onDone?.(response);
    } catch (error) {
      result.replaceChildren(problemBox(error));
      if (error.status === 401) form.elements.token.focus();
    } finally {
      button.disabled = false;
    }
  };
  const skip = byId("skip-confirm");
  const unskip = byId("unskip-confirm");
  skip.addEventListener("click", () => send("/skip", skip));
  unskip.addEventListener("click", () => send("/unskip", unskip));
  return {
    open(range) {
      resetRangeForm(form, result, range);
      dialog.showModal();
    },
  };
}

/** A one-step action (run now, refresh bounds): explain, ask for the token, POST, show the outcome. */
export function actionDialog() {
  const dialog = dialogParts("action-dialog");
  const form = byId("action-form");
  const result = byId("action-result");
  const confirm = byId("action-confirm");
  let current = null;
  confirm.addEventListener("click", async () => {
    if (!current) return;
    const secret = form.elements.token.value.trim();
    token.set(secret);
    confirm.disabled = true;
    try {
      const response = await postJSON(current.path, current.body || {}, secret);
      result.replaceChildren(h("div", { class: "success-box", role: "status" }, current.success(response)));
    } catch (error) {
      result.replaceChildren(problemBox(error));
      confirm.disabled = false;
    }
  });
  return {
    open(action) {
      current = action;
      byId("action-title").textContent = action.title;
      byId("action-text").textContent = action.text;
      confirm.textContent = action.confirm;
      confirm.disabled = false;
      form.elements.token.value = token.get();
      result.replaceChildren();
      dialog.showModal();
    },
  };
}
