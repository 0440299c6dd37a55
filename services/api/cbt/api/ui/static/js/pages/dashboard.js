// Dashboard: every incremental model's coverage timeline, one card per interval type (each its own x axis), and the
// scheduled models' last and next runs; live.

import { getJSON, modelPath, problemBox } from "../api.js";
import { CoverageGroup, summaryExtent, zoomBar } from "../coverage_group.js";
import { byId, emptyState, h, modelLink, show } from "../dom.js";
import { isTimeType, parseTimeTypes } from "../format.js";
import { configuredTransformations } from "../interval_types.js";
import { batcher, connectEvents } from "../live.js";
import { incrementalRow } from "../rows.js";
import { ScheduleCard } from "../schedule_card.js";
import { unionExtent } from "../scale.js";

const timeTypes = parseTimeTypes(document.body.dataset.timeTypes);
const root = byId("groups");
const schedules = new ScheduleCard(byId("schedules"), byId("schedules-body"));
/** interval type → {group, ids} */
const groups = new Map();
/** Set when a group had nothing to show yet (or loading failed): the next bounds update builds the page again. */
let rebuild = false;

function byIntervalType(models) {
  const types = new Map();
  for (const model of models) {
    const type = model.interval_type || "unknown";
    if (!types.has(type)) types.set(type, []);
    types.get(type).push(model);
  }
  return [...types.entries()].sort(([a], [b]) => a.localeCompare(b));
}

/** When no model has a summary yet: each model's default coverage window (valid range and coverage span). */
async function coverageExtent(models) {
  const windows = await Promise.all(models.map((m) => getJSON(modelPath(m.id, "/coverage"))
    .then((c) => c.window).catch(() => null)));
  return unionExtent(windows);
}

function groupCard(type, isTime, count, shown) {
  const bar = zoomBar();
  const label = h("span", { class: "window-label" });
  const body = h("div", { class: "group-body" }, h("div", { class: "placeholder" }, "Loading coverage…"));
  const card = h("section", { class: "card group", "data-interval-type": type },
    h("header", { class: "card-head" },
      h("h2", {}, type, h("span", { class: "muted" },
        `${count} model${count === 1 ? "" : "s"} · ${shown.length ? `shown as ${shown.map((t) => t.name).join(", ")}`
          : isTime ? "unix seconds, shown in UTC" : "integer positions"}`)),
      h("span", { class: "spacer" }), label, bar),
    body);
  return { card, bar, label, body };
}

async function buildGroup(type, models, parts) {
  const isTime = isTimeType(type, timeTypes);
  const rows = models.sort((a, b) => a.id.localeCompare(b.id))
    .map((m) => incrementalRow(m.id, modelLink(m.id), isTime));
  const extent = summaryExtent(models) || await coverageExtent(models);
  if (!extent) {
    rebuild = true;
    parts.bar.hidden = true;
    show(parts.body, emptyState("No positions yet",
      "None of these models has a valid range: their sources have no data yet, or the bounds-cache has not scanned them."));
    return;
  }
  const group = new CoverageGroup({ root: parts.body, rows, isTime, zoomBar: parts.bar, windowLabel: parts.label,
    shown: parts.shown });
  groups.set(type, { group, ids: new Set(models.map((m) => m.id)) });
  group.setExtent(extent);
}

async function load() {
  groups.clear();
  rebuild = false;
  let models;
  try {
    models = (await getJSON("/models", { type: "incremental" })).models.filter((m) => m.type === "incremental");
  } catch (error) {
    rebuild = true;
    show(root, problemBox(error));
    return;
  }
  if (!models.length) {
    show(root, h("section", { class: "card" }, emptyState("No incremental models",
      "Incremental transformations (type: incremental) are the models with coverage to chart. Add one under the "
      + "configured transformation paths, or open the DAG to see external and scheduled models.")));
    return;
  }
  const typed = await Promise.all(byIntervalType(models).map(async ([type, list]) => {
    const shown = await configuredTransformations(type);
    return { type, list, parts: { ...groupCard(type, isTimeType(type, timeTypes), list.length, shown), shown } };
  }));
  show(root, ...typed.map((t) => t.parts.card));
  await Promise.all(typed.map((t) => buildGroup(t.type, t.list, t.parts)));
}

/** New bounds move valid ranges (and the head a following window shows): re-read the summaries, then the rows. */
const refreshSummaries = batcher(async () => {
  if (rebuild) {
    await load();
    return;
  }
  let models;
  try {
    models = (await getJSON("/models", { type: "incremental" })).models;
  } catch {
    return;
  }
  for (const { group, ids } of groups.values()) {
    if (!group.setExtent(summaryExtent(models.filter((m) => ids.has(m.id))))) group.refresh();
  }
}, 1500);

const refreshRows = batcher((keys) => {
  for (const { group, ids } of groups.values()) {
    const mine = new Set([...keys].filter((k) => ids.has(k)));
    if (mine.size) group.refresh(mine);
  }
}, 600);

const refreshSchedules = batcher(() => schedules.load(), 1500);

function onEvent(name, data) {
  if (data.model && schedules.concerns(data.model)) refreshSchedules(data.model);
  if (name === "bounds-updated" || name === "invalidation") {
    refreshSummaries("all"); // an invalidation cascades to descendants: every row may change
    return;
  }
  if (data.model) refreshRows(data.model);
}

connectEvents(onEvent, () => {
  refreshSummaries("all");
  refreshSchedules("all");
});
load();
schedules.load();
