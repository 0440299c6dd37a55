// The explain view: can position P of a model run, and if not, exactly why: the dependency tree with each
// dependency's range, the holes overlapping the interval, and the reason (/models/{id}/explain?position=P).

import { h, modelLink } from "./dom.js";
import { formatPosition, formatRange } from "./format.js";
import { shownText } from "./interval_display.js";

function kindText(dep) {
  if (dep.kind === "or_group_member") return `OR group${dep.group != null ? ` ${dep.group}` : ""} member`;
  return dep.kind || "required";
}

function dependencyItem(dep, isTime) {
  const covers = Boolean(dep.covers);
  const holes = dep.holes || [];
  return h("li", { "data-model": dep.id, "data-covers": String(covers) },
    h("div", { class: "dep-line" },
      h("span", { class: `mark ${covers ? "yes" : "no"}`, title: covers ? "covers the interval" : "does not cover the interval" },
        covers ? "✓" : "✗"),
      modelLink(dep.id),
      h("span", { class: "detail" }, `${dep.type || ""} · ${kindText(dep)}`),
      h("span", { class: "detail" }, dep.range ? `range ${formatRange(dep.range[0], dep.range[1], isTime)}` : "no data")),
    holes.length ? h("div", { class: "holes" },
      `holes: ${holes.map(([s, e]) => formatRange(s, e, isTime)).join(", ")}`) : null,
    dep.reason ? h("div", { class: "dep-reason" }, dep.reason) : null,
    dep.dependencies?.length ? h("ul", {}, dep.dependencies.map((d) => dependencyItem(d, isTime))) : null);
}

function verdict(explain) {
  if (explain.covered) return { cls: "ok", text: "Covered: this interval has been processed." };
  if (explain.in_flight) return { cls: "ok", text: "In flight: a task for this interval is running now." };
  if (explain.ready) return { cls: "ok", text: "Ready: every dependency covers this interval; it runs on the next plan." };
  return { cls: "", text: explain.reason || "Not ready (the API gave no reason)." };
}

/** The explain view's DOM for one /explain answer; `shown`: the configured transformations of its interval type. */
export function explainView(explain, isTime, shown = []) {
  const [start, end] = explain.interval || [explain.position, explain.position];
  const badge = (on, yes, no, cls) => h("span", { class: `badge ${on ? cls : ""}` }, on ? yes : no);
  const v = verdict(explain);
  return h("div", { class: "explain", "data-position": explain.position, "data-ready": String(Boolean(explain.ready)) },
    h("div", { class: "explain-summary" },
      h("b", {}, formatRange(start, end, isTime)),
      badge(explain.covered, "covered", "not covered", "ok"),
      badge(explain.ready, "ready", "not ready", "ok"),
      explain.in_flight ? badge(true, "in flight", "", "info") : null),
    h("div", { class: `reason ${v.cls}`, "data-reason": explain.reason ?? "" },
      explain.reason && !v.cls ? h("b", {}, "Why not: ") : null, v.text),
    shownText(explain.position, shown)
      ? h("div", { class: "position-shown", "data-testid": "explain-shown" }, shownText(explain.position, shown)) : null,
    h("div", { class: "muted small" }, `Position ${formatPosition(explain.position, isTime)}${isTime ? ` (${explain.position})` : ""}; dependencies:`),
    explain.dependencies?.length
      ? h("ul", { class: "tree" }, explain.dependencies.map((d) => dependencyItem(d, isTime)))
      : h("div", { class: "empty" }, "This model has no dependencies."));
}
