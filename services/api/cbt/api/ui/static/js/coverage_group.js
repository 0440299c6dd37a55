// A group of coverage rows on one shared x axis (one interval type): the dashboard has one per interval type, the
// model page one for the model and its dependencies. Owns the window (zoom, pan, fit-and-follow), fetches each
// row's data for the window through the row's `load`, and redraws on resize, zoom, pan and live events.

import { h, s, tooltip } from "./dom.js";
import { formatPosition, formatRange, formatSpan } from "./format.js";
import { showPosition, shownText } from "./interval_display.js";
import {
  clampWindow, integerWindow, makeScale, panWindow, shiftWindow, unionExtent, zoomWindow,
} from "./scale.js";
import { drawAxis, drawRow, moveCursor, rangeAt, ticksFor } from "./timeline.js";

const FETCH_DELAY_MS = 180;
const CLICK_SLOP_PX = 4;
const STATUS_TEXT = {
  covered: "covered", missing: "missing", in_flight: "in flight", failed: "failed",
  invalidated_pending: "invalidated, pending re-run", skipped: "skipped by an operator (not planned)",
  held: "failed a check: not published, held until its inputs change", available: "available (source bounds)",
  always: "no limit once it has run (scheduled)", passed: "covered: its checks passed",
  warned: "covered: a warn check failed (published)", accepted: "covered: a failed check was accepted (published)",
};

export class CoverageGroup {
  /**
   * rows: [{key, label (Node), section?, load(window) → {ranges, valid_range, window, ...}, stats(data) → Node}]
   * zoomBar: the element holding data-action buttons; windowLabel: where the window is written.
   */
  constructor({ root, rows, isTime, zoomBar = null, windowLabel = null, clickable = false, onSelect = null, shown = [] }) {
    Object.assign(this, { root, isTime, zoomBar, windowLabel, clickable, onSelect, shown });
    this.rows = rows.map((spec) => ({ spec, data: null, error: null, seq: 0 }));
    this.window = null;
    this.extent = null;
    this.follow = true;
    this.selected = null;
    this.fetchTimer = null;
    this.build();
    this.bindZoomBar();
    new ResizeObserver(() => this.redraw()).observe(this.axisBox);
  }

  build() {
    this.axisSvg = s("svg", { class: "axis" });
    this.axisBox = h("div", { class: "tl-axis" }, this.axisSvg);
    const table = h("div", { class: "timeline-table" }, h("div", { class: "tl-row axis-row" }, h("div"), this.axisBox, h("div")));
    let section = null;
    for (const row of this.rows) {
      if (row.spec.section && row.spec.section !== section) {
        section = row.spec.section;
        table.append(h("div", { class: "section-label" }, section));
      }
      row.svg = s("svg", { class: `coverage${this.clickable ? " clickable" : ""}`, "data-model": row.spec.key });
      row.stats = h("div", { class: "tl-stats" });
      row.el = h("div", { class: "tl-row", "data-model": row.spec.key },
        h("div", { class: `tl-name${row.spec.section ? " dep" : ""}` }, row.spec.label),
        h("div", { class: "tl-chart" }, row.svg), row.stats);
      this.bindChart(row);
      table.append(row.el);
    }
    this.root.replaceChildren(table);
    this.root.removeAttribute("aria-busy");
  }

  bindZoomBar() {
    if (!this.zoomBar) return;
    this.zoomBar.addEventListener("click", (event) => {
      const action = event.target.closest("button")?.dataset.action;
      if (!action || !this.window) return;
      if (action === "fit") return this.fit();
      const moves = {
        "zoom-in": (w) => zoomWindow(w, 0.5), "zoom-out": (w) => zoomWindow(w, 2),
        "pan-left": (w) => panWindow(w, -0.25), "pan-right": (w) => panWindow(w, 0.25),
      };
      this.setWindow(moves[action](this.window), false);
    });
  }

  scale() {
    return makeScale(this.window[0], this.window[1], Math.max(this.axisBox.clientWidth, 10));
  }

  /** The span of every row's data; the window "Fit" shows and follows. */
  /** Returns whether the window moved to the new extent (then its rows are being fetched again). */
  setExtent(extent) {
    if (!extent) return false;
    const changed = !this.extent || extent[0] !== this.extent[0] || extent[1] !== this.extent[1];
    this.extent = extent;
    if (this.window && !(this.follow && changed)) return false;
    this.fit();
    return true;
  }

  fit() {
    if (!this.extent) return;
    this.setWindow(this.extent, true);
  }

  setWindow(window, follow) {
    this.window = clampWindow(window);
    this.follow = follow;
    this.zoomBar?.querySelector('[data-action="fit"]')?.setAttribute("aria-pressed", String(follow));
    this.redraw();
    clearTimeout(this.fetchTimer);
    this.fetchTimer = setTimeout(() => this.refresh(), FETCH_DELAY_MS);
  }

  /** Fetches the rows (all, or those whose key is in `keys`) for the current window, then draws them. */
  async refresh(keys = null) {
    if (!this.window) return;
    const window = integerWindow(this.window);
    const rows = this.rows.filter((row) => !keys || keys.has(row.spec.key));
    await Promise.all(rows.map((row) => this.load(row, window)));
    this.root.dataset.loaded = "true";
  }

  async load(row, window) {
    const seq = ++row.seq;
    try {
      const data = await row.spec.load(window);
      if (seq !== row.seq) return;
      Object.assign(row, { data, error: null });
    } catch (error) {
      if (seq !== row.seq) return;
      Object.assign(row, { data: null, error });
    }
    this.drawOne(row, this.scale(), ticksFor(this.scale(), this.isTime, this.shown));
  }

  redraw() {
    if (!this.window || !this.axisBox.isConnected) return;
    const scale = this.scale();
    const ticks = ticksFor(scale, this.isTime, this.shown);
    drawAxis(this.axisSvg, scale, ticks);
    for (const row of this.rows) this.drawOne(row, scale, ticks);
    if (this.windowLabel) {
      const [from, to] = this.window;
      const first = this.shown.slice(0, 1);
      const shown = first.length ? ` · ${shownText(Math.floor(from), first)} → ${showPosition(Math.ceil(to), first)[0].text ?? "?"}` : "";
      this.windowLabel.textContent = `${formatRange(Math.floor(from), Math.ceil(to), this.isTime)} · ${formatSpan(Math.round(to - from), this.isTime)}${shown}`;
    }
  }

  drawOne(row, scale, ticks) {
    drawRow(row.svg, row.data, scale, ticks, this.selected);
    row.svg.dataset.state = row.error ? "error" : row.data ? "loaded" : "loading";
    if (row.error) {
      row.stats.replaceChildren(h("span", { class: "tl-error", title: row.error.message }, row.error.problem?.title || "failed to load"));
    } else if (row.data && row.spec.stats) {
      row.stats.replaceChildren(...[row.spec.stats(row.data)].flat().filter(Boolean));
    }
  }

  /** Marks a position on every row (the model page's explained position). */
  select(position) {
    this.selected = position;
    this.redraw();
  }

  bindChart(row) {
    const svg = row.svg;
    let drag = null;
    const positionAt = (event) => {
      const scale = this.scale();
      const x = event.clientX - svg.getBoundingClientRect().left;
      return { x, position: scale.position(x), scale };
    };
    svg.addEventListener("pointerdown", (event) => {
      if (!this.window || event.button !== 0) return;
      drag = { x: event.clientX, window: this.window, moved: false };
      svg.setPointerCapture(event.pointerId);
    });
    svg.addEventListener("pointermove", (event) => {
      const { x, position, scale } = positionAt(event);
      if (drag && Math.abs(event.clientX - drag.x) > CLICK_SLOP_PX) {
        drag.moved = true;
        svg.classList.add("dragging");
        const delta = -(event.clientX - drag.x) * (drag.window[1] - drag.window[0]) / scale.width;
        this.setWindow(shiftWindow(drag.window, delta), false);
        tooltip.hide();
        return;
      }
      moveCursor(svg, x);
      this.hover(event, row, position);
    });
    svg.addEventListener("pointerup", (event) => {
      svg.classList.remove("dragging");
      const wasClick = drag && !drag.moved;
      drag = null;
      if (wasClick && this.clickable && this.onSelect) this.onSelect(Math.floor(positionAt(event).position), row);
    });
    svg.addEventListener("pointerleave", () => { moveCursor(svg, null); tooltip.hide(); });
    svg.addEventListener("wheel", (event) => {
      if (!this.window) return;
      event.preventDefault();
      const factor = Math.exp(Math.max(-200, Math.min(200, event.deltaY)) * 0.002);
      this.setWindow(zoomWindow(this.window, factor, positionAt(event).position), false);
    }, { passive: false });
  }

  hover(event, row, position) {
    const p = Math.floor(position);
    const range = rangeAt(row.data, p);
    const lines = [h("b", {}, row.spec.key), formatPosition(p, this.isTime)];
    const shown = shownText(p, this.shown);
    if (shown) lines.push(h("span", { class: "position-shown" }, shown));
    if (range) {
      lines.push(`${STATUS_TEXT[range.status] || range.status}: ${formatRange(range.start, range.end, this.isTime)}`);
      lines.push(formatSpan(range.end - range.start, this.isTime));
    }
    if (this.clickable) lines.push("click to explain this position");
    tooltip.show(event, ...lines);
  }
}

/** The extent of models from their /models summaries: valid range joined with the covered and skipped spans. */
export function summaryExtent(models) {
  return unionExtent(models.flatMap((m) => [m.summary?.valid_range, m.summary?.covered, m.summary?.skipped]));
}

/** The zoom and pan buttons (data-action), as the templates' _zoom.html has them. */
export function zoomBar() {
  const button = (action, text, title) => h("button", { type: "button", "data-action": action, title }, text);
  return h("div", { class: "zoom", role: "group", "aria-label": "Zoom and pan" },
    button("pan-left", "\u2190", "Pan left (older)"), button("zoom-out", "\u2212", "Zoom out"),
    button("zoom-in", "+", "Zoom in"), button("pan-right", "\u2192", "Pan right (newer)"),
    button("fit", "Fit", "Fit the whole range and follow new data"));
}
