// Model page: header and actions, the model's coverage with its dependencies' aligned under it (one x scale), the
// explain view and rendered SQL for a clicked position, an exposed model's rows, task history, invalidations and
// configuration. Live.

import { actionDialog, rerunDialog, skipDialog } from "../actions.js";
import { getJSON, modelPath, problemBox } from "../api.js";
import { boundsDialog } from "../bounds.js";
import { CoverageGroup, summaryExtent } from "../coverage_group.js";
import { byId, emptyState, h, modelHref, modelLink, show } from "../dom.js";
import { explainView } from "../explain.js";
import { formatNumber, formatSpan, isTimeType, parseTimeTypes, splitModelId } from "../format.js";
import { configuredTransformations } from "../interval_types.js";
import { batcher, connectEvents } from "../live.js";
import { boundsCache, externalRow, incrementalRow, scheduledRow } from "../rows.js";
import { unionExtent } from "../scale.js";
import { rowsCard } from "../table_rows.js";
import {
  configView, invalidationsView, renderedView, scheduledRunsView, tasksView, templateView,
} from "../sections.js";

const modelId = byId("model-root").dataset.modelId;
const timeTypes = parseTimeTypes(document.body.dataset.timeTypes);
const state = { model: null, isTime: false, shown: [], group: null, selected: null, interval: null, tab: "template", index: new Map() };
const bounds = boundsCache();

function header(model) {
  const typeBadge = byId("model-type");
  typeBadge.textContent = model.type;
  typeBadge.className = `badge t-${model.type}`;
  const cfg = model.config || {};
  const meta = [];
  if (model.interval_type) {
    meta.push(h("span", {}, "interval type ", h("b", {}, model.interval_type),
      state.shown.length ? h("span", { class: "muted", id: "shown-as" }, ` (shown as ${state.shown.map((t) => t.name).join(", ")})`) : ""));
  }
  if (cfg.interval?.max != null) {
    meta.push(h("span", {}, "interval ", h("b", {}, formatSpan(cfg.interval.max, state.isTime)),
      cfg.interval.min != null && cfg.interval.min !== cfg.interval.max ? ` (min ${formatSpan(cfg.interval.min, state.isTime)})` : ""));
  }
  if (model.schedule || cfg.schedule) meta.push(h("span", {}, "schedule ", h("b", {}, model.schedule || cfg.schedule)));
  if (cfg.schedules) {
    meta.push(h("span", {}, "forward fill ", h("b", {}, cfg.schedules.forwardfill || "off"), " · backfill ", h("b", {}, cfg.schedules.backfill || "off")));
  }
  const tags = cfg.tags || [];
  if (tags.length) meta.push(h("span", {}, ...tags.map((t) => h("span", { class: "tag" }, t))));
  show(byId("model-meta"), ...meta);
  byId("model-path").textContent = model.path || "";
}

function actions(model) {
  const root = byId("model-actions");
  const action = actionDialog();
  if (model.type === "incremental") {
    const rerun = rerunDialog({ modelId, isTime: state.isTime, onDone: () => refreshAll("all") });
    const skip = skipDialog({ modelId, isTime: state.isTime, onDone: () => refreshAll("all") });
    root.append(h("button", { type: "button", class: "primary", id: "rerun-open",
      onclick: () => rerun.open(state.interval) }, "Rerun a range…"),
    h("button", { type: "button", id: "skip-open", onclick: () => skip.open(state.interval) }, "Skip a range…"),
    h("button", { type: "button", id: "consolidate-open", onclick: () => action.open({
      title: `Consolidate ${modelId} now`, text: "Merges this model's completion rows in the admin table now "
        + "(coverage and task boundaries unchanged), as the coordinator does on scheduler.consolidation.",
      confirm: "Consolidate now", path: modelPath(modelId, "/consolidate"),
      success: (r) => `Consolidated: ${r.rows_before} → ${r.rows_after} rows, coverage unchanged.` }) }, "Consolidate now"));
  } else if (model.type === "scheduled") {
    root.append(h("button", { type: "button", id: "run-now", onclick: () => action.open({
      title: `Run ${modelId} now`, text: "Publishes a task for this scheduled model outside its schedule.",
      confirm: "Run now", path: modelPath(modelId, "/run-now"),
      success: (r) => `Run requested (task ${r.task_id ?? "?"}).` }) }, "Run now"));
  } else if (model.type === "external") {
    const editBounds = boundsDialog({ modelId, onDone: () => refreshAll("all") });
    root.append(h("button", { type: "button", id: "refresh-bounds", onclick: () => action.open({
      title: `Refresh the bounds of ${modelId}`, text: "Asks the bounds-cache to scan this source's bounds now.",
      confirm: "Refresh bounds", path: `/bounds/${encodeURIComponent(modelId)}/refresh`,
      success: () => "Bounds refresh requested: dependents are re-planned when the scan changes them." }) }, "Refresh bounds"),
    h("button", { type: "button", id: "bounds-open", onclick: () => editBounds.open() }, "Edit bounds…"));
  }
}

/** [{id, kind}] of the model's dependencies, OR groups flattened ("OR group 1"). */
function flatDependencies(model) {
  return (model.dependencies || []).flatMap((dep, i) => Array.isArray(dep)
    ? dep.map((id) => ({ id, kind: `OR group ${i + 1}` })) : [{ id: dep, kind: "required" }]);
}

/** A dependency's name: the table alone when it is in the model's database (the full id is in the tooltip). */
function depLink(id) {
  const [database, table] = splitModelId(id);
  return database === state.model.database ? h("a", { href: modelHref(id), title: id }, table) : modelLink(id);
}

function rowFor(id, kind, section) {
  const other = state.index.get(id);
  const label = h("span", {}, depLink(id), kind ? h("span", { class: "kind" }, kind) : null);
  if (other?.type === "external") return externalRow(id, label, bounds, section);
  if (other?.type === "scheduled") return scheduledRow(id, label, section);
  return incrementalRow(id, label, state.isTime, section);
}

function coverageRows(model) {
  const self = h("b", {}, model.table || modelId);
  if (model.type === "external") {
    const dependents = (model.dependents || []).filter((id) => state.index.get(id)?.type === "incremental");
    return [externalRow(modelId, self, bounds), ...dependents.map((id) => rowFor(id, null, "Dependents"))];
  }
  return [incrementalRow(modelId, self, state.isTime, null, Boolean(model.config?.checks?.length)), ...flatDependencies(model).map((d) => rowFor(d.id, d.kind, "Dependencies"))];
}

async function extentOf(rows) {
  const summaries = rows.map((r) => state.index.get(r.key)).filter(Boolean);
  const fromSummaries = summaryExtent(summaries);
  const list = await bounds().catch(() => []);
  const fromBounds = unionExtent(list.filter((b) => rows.some((r) => r.key === b.model)).map((b) => b.valid_range));
  return unionExtent([fromSummaries, fromBounds]);
}

async function coverage(model) {
  const root = byId("timelines");
  if (model.type === "scheduled") {
    byId("coverage-card").querySelector("h2").textContent = "Scheduled runs";
    byId("coverage-card").querySelectorAll(".zoom, .legend, .hint").forEach((el) => el.remove());
    const runs = await getJSON("/scheduled").then((b) => b.runs.filter((r) => r.model === modelId)).catch((e) => e);
    show(root, runs instanceof Error ? problemBox(runs) : scheduledRunsView(runs));
    return;
  }
  const rows = coverageRows(model);
  const extent = await extentOf(rows);
  if (!extent) {
    show(root, emptyState("No positions yet", "Neither this model nor its dependencies have data: the sources are empty or not scanned yet."));
    return;
  }
  const card = byId("coverage-card");
  state.group = new CoverageGroup({
    root, rows, isTime: state.isTime, zoomBar: card.querySelector(".zoom"), windowLabel: byId("window-label"),
    clickable: model.type === "incremental", onSelect: (p) => select(p), shown: state.shown,
  });
  state.group.setExtent(extent);
}

async function explain(position) {
  const root = byId("explain");
  byId("explain-position").textContent = `position ${state.isTime ? position : formatNumber(position)}`;
  try {
    const answer = await getJSON(modelPath(modelId, "/explain"), { position });
    if (state.selected !== position) return;
    state.interval = answer.interval || null;
    show(root, explainView(answer, state.isTime, state.shown));
  } catch (error) {
    show(root, problemBox(error));
  }
}

/** The model's checks: what is held now and the latest verdicts — of the interval holding ``position`` when given,
 *  with samples of its violating rows (docs/checks.md). */
async function checks(position = null) {
  const card = byId("checks-card");
  if (state.model.type !== "incremental" || !state.model.config?.checks?.length) return;
  card.hidden = false;
  const query = position == null ? { limit: 20 } : { from: position, to: position + 1, limit: 50 };
  byId("checks-position").textContent = position == null ? "latest" :
    `position ${state.isTime ? position : formatNumber(position)}`;
  try {
    const answer = await getJSON(modelPath(modelId, "/checks"), query);
    if (position != null && state.selected !== position) return;
    show(byId("checks"), checksView(answer, position));
  } catch (error) {
    show(byId("checks"), problemBox(error));
  }
}

function checksView(answer, position) {
  const held = answer.held.map((x) => h("li", { class: "held-item" }, h("span", { class: "badge st-held" }, "held"),
    ` [${x.range[0]}, ${x.range[1]}) ${x.reason}`));
  const rows = answer.results.map((r) => h("tr", { class: `check-${r.status}` },
    h("td", { class: "mono" }, `[${r.range[0]}, ${r.range[1]})`), h("td", {}, r.check),
    h("td", {}, h("span", { class: `badge st-${r.status}` }, r.status)), h("td", { class: "num" }, formatNumber(r.violations)),
    h("td", { class: "num" }, r.rows == null ? "—" : formatNumber(r.rows)),
    h("td", {}, r.sample.length ? h("pre", { class: "sample mono" }, r.sample.join("\n")) : "—")));
  return [
    held.length ? h("ul", { class: "held-list" }, held) : h("p", { class: "muted" }, "No interval is held by a failed check."),
    rows.length ? h("table", { class: "data checks-table" },
      h("thead", {}, h("tr", {}, ["interval", "check", "status", "violations", "rows", "violating rows (sample)"].map((t) => h("th", {}, t)))),
      h("tbody", {}, rows))
      : h("p", { class: "muted" }, position == null ? "No verdict recorded yet." : "No check ran on this position's interval."),
  ];
}

async function select(position) {
  state.selected = position;
  history.replaceState(null, "", `#position=${position}`);
  state.group?.select(position);
  const max = state.model.config?.interval?.max || 1;
  state.interval = [position, position + max];
  checks(position);
  await explain(position);
  if (state.tab !== "rendered") setTab("rendered");
  else renderSql();
}

async function renderSql() {
  const root = byId("sql");
  if (state.tab === "template" || state.model.type !== "incremental") {
    show(root, templateView(state.model));
    return;
  }
  if (!state.interval) {
    show(root, emptyState("Pick a position", "Click a position on the timeline: the SQL is rendered for its interval."));
    return;
  }
  const [start, end] = state.interval;
  try {
    show(root, renderedView(await getJSON(modelPath(modelId, "/rendered"), { start, end }), state.isTime));
  } catch (error) {
    show(root, problemBox(error));
  }
}

function setTab(tab) {
  state.tab = tab;
  byId("sql-card").querySelectorAll("[data-tab]").forEach((b) => b.setAttribute("aria-selected", String(b.dataset.tab === tab)));
  renderSql();
}

async function section(id, load, view) {
  try {
    show(byId(id), view(await load()));
  } catch (error) {
    show(byId(id), problemBox(error));
  }
}

const tasks = () => section("tasks", () => getJSON(modelPath(modelId, "/tasks"), { limit: 100 }).then((b) => b.tasks), (t) => tasksView(t, state.isTime));
const invalidations = () => section("invalidations", () => getJSON("/invalidations", { model: modelId }).then((b) => b.invalidations), (i) => invalidationsView(i, state.isTime));

/** Before the model or its dependencies had data the coverage card said so: build it once data has come. */
async function retryCoverage() {
  if (state.retrying) return;
  state.retrying = true;
  try {
    const list = await getJSON("/models").then((b) => b.models).catch(() => null);
    if (list) state.index = new Map(list.map((m) => [m.id, m]));
    await coverage(state.model);
  } finally {
    state.retrying = false;
  }
}

const refreshAll = batcher((keys) => {
  bounds.reset();
  if (state.group) state.group.refresh(keys.has("all") ? null : keys);
  else if (state.model.type !== "scheduled") retryCoverage();
  if (keys.has("all") || keys.has(modelId)) {
    tasks();
    invalidations();
  }
  if (state.selected != null) explain(state.selected);
}, 700);

function related(model) {
  return new Set([modelId, ...flatDependencies(model).map((d) => d.id), ...(model.dependents || [])]);
}

async function load() {
  try {
    state.model = await getJSON(modelPath(modelId));
  } catch (error) {
    show(byId("model-error"), problemBox(error));
    document.querySelector(".model-grid").hidden = true;
    return;
  }
  const model = state.model;
  state.isTime = isTimeType(model.interval_type, timeTypes);
  state.shown = model.interval_type ? await configuredTransformations(model.interval_type) : [];
  const list = await getJSON("/models").then((b) => b.models).catch(() => []);
  state.index = new Map(list.map((m) => [m.id, m]));
  header(model);
  actions(model);
  show(byId("config"), configView(model));
  byId("sql-card").querySelectorAll("[data-tab]").forEach((b) => b.addEventListener("click", () => setTab(b.dataset.tab)));
  if (model.type !== "incremental") byId("explain-card").hidden = true;
  renderSql();
  tasks();
  invalidations();
  checks();
  if (model.config?.expose) rowsCard(modelId);
  await coverage(model);
  const fromHash = /position=(\d+)/.exec(location.hash);
  if (fromHash && model.type === "incremental") select(Number(fromHash[1]));
  const mine = related(model);
  connectEvents((name, data) => {
    if (name === "bounds-updated" || name === "invalidation") refreshAll("all");
    else if (mine.has(data.model)) refreshAll(data.model);
  }, () => refreshAll("all"));
}

load();
