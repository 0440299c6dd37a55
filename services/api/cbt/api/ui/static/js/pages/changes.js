// Changes page: every model's versions (/api/v1/model-versions) — live, building (with how far the build covers),
// retired (a rollback can go back to it), and which intervals of the table each one's rows hold (two at once while
// an in-place change runs) — and what the loaded files would change (/api/v1/model-changes). Live.

import { getJSON, problemBox } from "../api.js";
import { byId, emptyState, h, modelLink, show, table } from "../dom.js";
import { formatAgo, formatMs, formatRange } from "../format.js";
import { intervalTypes } from "../interval_types.js";
import { batcher, connectEvents } from "../live.js";

const versionsRoot = byId("versions");
const changesRoot = byId("changes");
const size = (ranges) => (ranges || []).reduce((sum, [s, e]) => sum + (e - s), 0);
let timed = new Set(); // the models whose positions are unix seconds (shown as times)
const ranges = (id, list) => list.map(([s, e]) => formatRange(s, e, timed.has(id))).join(", ");

async function timedModels() {
  const [models, types] = await Promise.all([getJSON("/models").then((b) => b.models).catch(() => []), intervalTypes()]);
  return new Set(models.filter((m) => types[m.interval_type]?.is_time).map((m) => m.id));
}

function progress(v) {
  if (v.state !== "building") return "";
  const goal = size(v.live_covered);
  const done = goal ? Math.min(100, Math.round((100 * size(v.build_covered)) / goal)) : 100;
  return h("span", { class: "build-progress", "data-percent": String(done), title: `${v.build_table}` },
    h("span", { class: "bar" }, h("span", { class: "fill", style: `width:${done}%` })), ` ${done}%`);
}

function versionsView(body) {
  if (!body.recorded) return emptyState("Versions not readable", "spark.warehouse is not set: the versions are read from their table's files.");
  if (!body.versions.length) return emptyState("No versions yet", "The coordinator records every model's version at its first start.");
  return h("div", { class: "table-scroll" }, table([
    { label: "Model", cell: (v) => modelLink(v.model) },
    { label: "Version", class: "num", cell: (v) => String(v.version) },
    { label: "State", cell: (v) => h("span", { class: `version-state ${v.state}` }, v.state.replace("_", " ")) },
    { label: "Category", cell: (v) => v.category },
    { label: "Why", cell: (v) => (v.reasons.length ? v.reasons.join("; ") : "—") },
    { label: "Since", cell: (v) => h("span", { title: formatMs(v.deployed_at_ms) }, formatAgo(v.deployed_at_ms)) },
    { label: "Holds", cell: (v) => (v.holds.length ? ranges(v.model, v.holds) : "—") },
    { label: "Build", cell: progress },
  ], body.versions, { "data-table": "versions" }));
}

// "12 intervals in 1 task, about 9.6 s": the time from the model's recorded runs, when it has any.
function work(r) {
  if (!r.intervals) return "—";
  const tasks = `${r.intervals} interval${r.intervals === 1 ? "" : "s"} in ${r.tasks} task${r.tasks === 1 ? "" : "s"}`;
  return r.estimate_s == null ? `${tasks}, no run recorded to time it` : `${tasks}, about ${r.estimate_s} s`;
}

function changesView(body) {
  if (!body.compared) return emptyState("Not compared", body.why_not || "The deployed versions cannot be read.");
  if (!body.changed.length) return emptyState("No changes", "The loaded files define the deployed versions: deploying them recomputes nothing.");
  return h("div", {},
    table([
      { label: "Changed model", cell: (c) => modelLink(c.id) },
      { label: "Category", cell: (c) => c.category },
      { label: "Why", cell: (c) => c.reasons.join("; ") },
    ], body.changed, { "data-table": "changed" }),
    table([
      { label: "Recomputes", cell: (r) => modelLink(r.id) },
      { label: "Ranges", cell: (r) => (r.ranges.length ? ranges(r.id, r.ranges) : "at its next run") },
      { label: "Work", cell: work },
      { label: "Why", cell: (r) => r.why.join("; ") },
    ], body.recompute, { "data-table": "recompute" }));
}

async function load() {
  const [versions, changes, times] = await Promise.allSettled([getJSON("/model-versions"), getJSON("/model-changes"),
    timedModels()]);
  timed = times.status === "fulfilled" ? times.value : new Set();
  show(versionsRoot, versions.status === "fulfilled" ? versionsView(versions.value) : problemBox(versions.reason));
  show(changesRoot, changes.status === "fulfilled" ? changesView(changes.value) : problemBox(changes.reason));
  versionsRoot.dataset.loaded = "true";
  changesRoot.dataset.loaded = "true";
}

const reload = batcher(() => load(), 2000);
connectEvents((name) => { if (name === "interval-completed" || name === "invalidation") reload("x"); }, () => reload("x"));
await load();
