// Row specs for CoverageGroup: how each kind of model's timeline is loaded and summarised.
//   incremental → its coverage for the window (/models/{id}/coverage), with lag and counts;
//   external    → its bounds (/bounds) as one "available" range;
//   scheduled   → unbounded for its dependents once it has run (before its first run, nothing is ready).

import { getJSON, modelPath } from "./api.js";
import { h } from "./dom.js";
import { formatLag, formatNumber } from "./format.js";

const COUNT_LABELS = [
  ["in_flight", "running", "fly"], ["failed", "failed", "fail"], ["held", "failed a check", "held"],
  ["warned", "warned", "warned"], ["accepted", "accepted", "accepted"],
  ["invalidated_pending", "to re-run", "inv"], ["skipped", "skipped", "skip"], ["missing", "missing", "miss"],
];

/** Lag and the window's counts (in intervals of interval.max), only those that are not zero. */
export function coverageStats(data, isTime) {
  const parts = [];
  const lag = formatLag(data.lag, data.lag_seconds, isTime);
  parts.push(h("span", { class: "lag", title: "How far the covered frontier is behind the newest ready data" },
    lag == null ? "lag —" : `lag ${lag}`));
  const counts = data.intervals || {};
  for (const [key, label, cls] of COUNT_LABELS) {
    const n = counts[key];
    if (n) parts.push(h("span", { class: cls, title: `${key.replace("_", " ")} in this window (intervals)` }, `${formatNumber(n)} ${label}`));
  }
  return parts;
}

/** ``checks``: covered intervals coloured by their latest checks (passed, warned, accepted), for a model with checks. */
export function incrementalRow(id, label, isTime, section = null, checks = false) {
  return {
    key: id, label, section,
    load: (window) => getJSON(modelPath(id, "/coverage"), { from: window[0], to: window[1], ...(checks ? { checks: true } : {}) }),
    stats: (data) => coverageStats(data, isTime),
  };
}

/** An external dependency: the range its bounds make available (after lag), from /bounds. */
export function externalRow(id, label, bounds, section = null) {
  return {
    key: id, label, section,
    load: async (window) => {
      const entry = (await bounds()).find((b) => b.model === id);
      const valid = entry?.valid_range || null;
      const ranges = [];
      if (valid) {
        const start = Math.max(valid[0], window[0]);
        const end = Math.min(valid[1], window[1]);
        if (end > start) ranges.push({ start, end, status: "available" });
      }
      return { window, ranges, valid_range: valid, bounds: entry || null };
    },
    stats: (data) => h("span", { title: "Bounds scanned by the bounds-cache" },
      data.bounds ? (data.valid_range ? "source bounds" : "no data yet") : "not scanned yet"),
  };
}

export function scheduledRow(id, label, section = null) {
  return {
    key: id, label, section,
    load: async (window) => ({ window, ranges: [{ start: window[0], end: window[1], status: "always" }], valid_range: null }),
    stats: () => h("span", {}, "scheduled: no limit once it has run"),
  };
}

/** Memoises one /bounds request for the rows that read it, until `reset()`. */
export function boundsCache() {
  let pending = null;
  const get = () => (pending ??= getJSON("/bounds").then((body) => body.bounds || []).catch((e) => { pending = null; throw e; }));
  get.reset = () => { pending = null; };
  return get;
}
