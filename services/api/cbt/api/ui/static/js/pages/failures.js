// Failures page: tasks that failed their last attempt (/api/v1/failures), newest first, filterable by model. Live.

import { getJSON, problemBox } from "../api.js";
import { byId, emptyState, h, modelLink, show, table } from "../dom.js";
import { formatAgo, formatMs, formatRange, isTimeType, parseTimeTypes } from "../format.js";
import { batcher, connectEvents } from "../live.js";
import { modelFilter } from "../filter.js";

const timeTypes = parseTimeTypes(document.body.dataset.timeTypes);
const root = byId("failures");
let types = new Map();

function view(failures) {
  if (!failures.length) {
    return emptyState("No failures", "Every task that ran has succeeded, or its failures were retried successfully.");
  }
  const isTime = (f) => isTimeType(types.get(f.model), timeTypes);
  const sorted = [...failures].sort((a, b) => (b.failed_at_ms ?? 0) - (a.failed_at_ms ?? 0));
  return h("div", {},
    h("div", { class: "muted small", style: "margin-bottom:6px" }, `${sorted.length} failed task${sorted.length === 1 ? "" : "s"}`),
    table([
      { label: "Failed", cell: (f) => h("span", { title: formatMs(f.failed_at_ms) }, formatAgo(f.failed_at_ms)) },
      { label: "Model", cell: (f) => modelLink(f.model) },
      { label: "Range", cell: (f) => (f.range ? formatRange(f.range[0], f.range[1], isTime(f)) : "—") },
      { label: "Attempts", class: "num", cell: (f) => f.attempts ?? "—" },
      { label: "Worker", cell: (f) => h("span", { class: "mono" }, f.worker || "—") },
      { label: "Task", cell: (f) => h("span", { class: "mono small" }, f.task_id) },
      { label: "Error", class: "err", cell: (f) => (f.error ? h("pre", {}, f.error) : "") },
    ], sorted, { "data-table": "failures" }));
}

async function load(model) {
  try {
    show(root, view((await getJSON("/failures", { model })).failures));
    root.dataset.loaded = "true";
  } catch (error) {
    show(root, problemBox(error));
  }
}

let filter = null;
const reload = batcher(() => filter && load(filter.value()), 1000);
connectEvents((name) => { if (name === "task-failed" || name === "invalidation") reload("x"); }, () => reload("x"));
filter = await modelFilter(byId("model-filter"), (model) => load(model));
types = filter.types;
await load(filter.value());
