// The model page's tables and panels: configuration, SQL, task history, invalidations, scheduled runs.

import { h, emptyState, modelLink, table } from "./dom.js";
import { formatMillis, formatMs, formatAgo, formatRange } from "./format.js";

function scalar(v) {
  if (v == null) return h("span", { class: "muted" }, "—");
  if (Array.isArray(v)) return v.length ? v.map((x) => (typeof x === "object" ? JSON.stringify(x) : String(x))).join(", ") : h("span", { class: "muted" }, "none");
  if (typeof v === "object") return JSON.stringify(v);
  return String(v);
}

/** A mapping as "key value" pairs (unset keys left out), anything else as text. */
function value(v) {
  if (v == null || typeof v !== "object" || Array.isArray(v)) return scalar(v);
  const set = Object.entries(v).filter(([, x]) => x != null && !(Array.isArray(x) && !x.length));
  if (!set.length) return h("span", { class: "muted" }, "defaults");
  return h("span", { class: "pairs" }, set.map(([k, x]) => h("span", { class: "pair" }, h("span", { class: "k" }, k), " ", scalar(x))));
}

function dependencyItems(dependencies) {
  return dependencies.map((dep, i) => Array.isArray(dep)
    ? h("li", {}, h("span", { class: "muted" }, `OR group ${i + 1}: `),
      dep.flatMap((id, j) => [j ? h("span", { class: "muted" }, " or ") : null, modelLink(id)]))
    : h("li", {}, modelLink(dep)));
}

/** The validated frontmatter as key/value lines, then dependencies and dependents. */
export function configView(model) {
  const entries = Object.entries(model.config || {}).filter(([, v]) => v != null && !(typeof v === "object" && !Object.keys(v).length));
  return h("div", {},
    entries.length ? h("dl", { class: "kv" }, entries.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, value(v))]))
      : emptyState("No configuration", "The model sets no optional fields."),
    h("div", { class: "section-label" }, "Depends on"),
    model.dependencies?.length ? h("ul", { class: "dep-list" }, dependencyItems(model.dependencies)) : h("div", { class: "muted" }, "nothing (a source)"),
    h("div", { class: "section-label" }, "Used by"),
    model.dependents?.length ? h("ul", { class: "dep-list" }, model.dependents.map((id) => h("li", {}, modelLink(id))))
      : h("div", { class: "muted" }, "no model depends on it"));
}

/** The template (SQL text or the exec command). */
export function templateView(model) {
  if (model.sql != null) return h("pre", { class: "code", "data-kind": "template" }, model.sql);
  if (model.exec != null) return h("div", {}, h("div", { class: "code-caption" }, "Command (exec model), run from the config's folder"), h("pre", { class: "code", "data-kind": "template" }, model.exec));
  return emptyState("No template", "External models without a query and scheduled reports may have none.");
}

/** /rendered: the SQL (or command and environment) a worker runs for [start, end). */
export function renderedView(rendered, isTime) {
  const caption = h("div", { class: "code-caption" }, `Rendered for ${formatRange(rendered.start, rendered.end, isTime)}`,
    isTime ? ` ([${rendered.start}, ${rendered.end}))` : "");
  if (rendered.sql != null) return h("div", {}, caption, h("pre", { class: "code", "data-kind": "rendered" }, rendered.sql));
  const env = Object.entries(rendered.env || {}).map(([k, v]) => `${k}=${v}`).join("\n");
  return h("div", {}, caption,
    h("pre", { class: "code", "data-kind": "rendered" }, (rendered.command || []).join(" ")),
    env ? h("div", { class: "code-caption" }, "Environment") : null,
    env ? h("pre", { class: "code" }, env) : null);
}

export function tasksView(tasks, isTime) {
  if (!tasks.length) return emptyState("No task has run yet", "Tasks appear here once a worker finishes an interval of this model, or an attempt fails.");
  return h("div", { class: "table-scroll" }, table([
    { label: "Finished", cell: (t) => h("span", { title: formatMs(t.at_ms) }, formatAgo(t.at_ms)) },
    { label: "Range", cell: (t) => t.range ? formatRange(t.range[0], t.range[1], isTime) : t.scheduled_unix != null ? formatMs(t.scheduled_unix * 1000) : "—" },
    { label: "Status", cell: (t) => h("span", { class: `status ${t.status}` }, t.status) },
    { label: "Direction", cell: (t) => t.direction || "—" },
    { label: "Attempts", class: "num", cell: (t) => t.attempts ?? "—" },
    { label: "Duration", class: "num", cell: (t) => formatMillis(t.duration_ms) },
    { label: "Worker", cell: (t) => h("span", { class: "mono" }, t.worker || "—") },
    { label: "Error", class: "err", cell: (t) => t.error ? h("pre", {}, t.error) : "" },
  ], tasks, { "data-table": "tasks" }));
}

export function invalidationsView(invalidations, isTime) {
  if (!invalidations.length) return emptyState("No invalidations", "Nothing has asked to re-run a range of this model (reorgs, corrections, reruns).");
  return h("div", { class: "table-scroll" }, table([
    { label: "When", cell: (i) => h("span", { title: formatMs(i.created_at_ms) }, formatAgo(i.created_at_ms)) },
    { label: "Model", cell: (i) => modelLink(i.model) },
    { label: "Range", cell: (i) => formatRange(i.start, i.end, isTime) },
    { label: "Reason", cell: (i) => `${i.reason || "—"}${i.source ? ` (${i.source})` : ""}` },
    { label: "Cascade", cell: (i) => (i.cascade ? "yes" : "no") },
    { label: "Affected", cell: (i) => affectedSummary(i.affected, isTime) },
  ], invalidations, { "data-table": "invalidations" }));
}

function affectedSummary(affected, isTime) {
  const entries = Object.entries(affected || {});
  if (!entries.length) return h("span", { class: "muted" }, "nothing covered");
  return h("span", { title: entries.map(([id, r]) => `${id}: ${r.map(([s, e]) => formatRange(s, e, isTime)).join(", ")}`).join("\n") },
    `${entries.length} model${entries.length === 1 ? "" : "s"}`);
}

export function scheduledRunsView(runs) {
  if (!runs.length) return emptyState("No runs yet", "Runs appear after the schedule's first tick.");
  return h("div", { class: "table-scroll" }, table([
    { label: "Scheduled for", cell: (r) => formatMs((r.scheduled_unix ?? 0) * 1000) },
    { label: "Status", cell: (r) => h("span", { class: `status ${r.status}` }, r.status) },
    { label: "Duration", class: "num", cell: (r) => formatMillis(r.duration_ms) },
    { label: "Finished", cell: (r) => h("span", { title: formatMs(r.at_ms) }, formatAgo(r.at_ms)) },
    { label: "Error", class: "err", cell: (r) => r.error ? h("pre", {}, r.error) : "" },
  ], runs, { "data-table": "scheduled" }));
}
