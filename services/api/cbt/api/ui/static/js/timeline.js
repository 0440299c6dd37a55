// Draws one coverage row and the shared time axis as SVG. Each range the API reported becomes one <rect> carrying
// data-start, data-end and data-status exactly as the API gave them (the browser tests compare them with /coverage).

import { s } from "./dom.js";
import { showOne } from "./interval_display.js";
import { tickLabel, tickValues } from "./scale.js";

export const ROW_H = 30;
const BAR_Y = 6;
const BAR_H = 16;
const VALID_Y = BAR_Y + BAR_H + 4;
export const AXIS_H = 24;

const TICK_PX = 90;
const CHAR_PX = 6;
/** About how wide a tick's label is drawn (11 px digits). */
const labelPx = (label) => label.length * CHAR_PX;

/**
 * Ticks for a scale, sized to the pixels available (about one label per 90 px, more for longer labels). Positions
 * of a type that is not a time but that the config says how to show (`shown`, config interval_types) are labelled
 * with its first form, as the tooltip shows them (a slot as its time); time types keep their compact UTC labels.
 */
export function ticksFor(scale, isTime, shown = []) {
  const form = isTime ? null : shown[0] ?? null;
  const ticks = (pxPerTick) => {
    const { step, values } = tickValues(scale.from, scale.to, Math.max(2, Math.floor(scale.width / pxPerTick)), isTime);
    return values.map((value) => ({
      value, x: scale.x(value), label: (form && showOne(value, form)) ?? tickLabel(value, step, isTime),
    }));
  };
  const first = ticks(TICK_PX);
  if (!form) return first;
  const needed = Math.max(0, ...first.map((t) => labelPx(t.label))) + 16;
  return needed > TICK_PX ? ticks(needed) : first;
}

export function drawAxis(svg, scale, ticks) {
  svg.replaceChildren();
  svg.setAttribute("height", AXIS_H);
  svg.setAttribute("viewBox", `0 0 ${scale.width} ${AXIS_H}`);
  for (const tick of ticks) {
    svg.append(s("line", { x1: tick.x, x2: tick.x, y1: AXIS_H - 6, y2: AXIS_H }));
    const half = labelPx(tick.label) / 2;
    const anchor = tick.x < half ? "start" : tick.x > scale.width - half ? "end" : "middle";
    svg.append(s("text", { x: tick.x, y: AXIS_H - 10, "text-anchor": anchor, "data-value": tick.value }, tick.label));
  }
}

function rangeRect(range, scale) {
  const x1 = Math.max(scale.x(range.start), -2);
  const x2 = Math.min(scale.x(range.end), scale.width + 2);
  return s("rect", {
    class: `range ${range.status}`,
    x: x1.toFixed(2), y: BAR_Y, height: BAR_H, width: Math.max(x2 - x1, 0.75).toFixed(2),
    "data-start": range.start, "data-end": range.end, "data-status": range.status,
  });
}

/**
 * Draws a row: gridlines, the ranges, the valid range as a line under the bar, and the selected position.
 * `data` is null while the first request is under way.
 */
export function drawRow(svg, data, scale, ticks, selected) {
  svg.replaceChildren();
  svg.setAttribute("height", ROW_H);
  svg.setAttribute("viewBox", `0 0 ${scale.width} ${ROW_H}`);
  for (const tick of ticks) svg.append(s("line", { class: "gridline", x1: tick.x, x2: tick.x, y1: 0, y2: ROW_H }));
  if (data) {
    svg.dataset.windowFrom = data.window[0];
    svg.dataset.windowTo = data.window[1];
    // Every range the API reported is in the DOM; those outside the drawn window (a pan, before the new window's
    // data arrives) are hidden, so a row always holds exactly what the API said.
    const bars = s("g", { class: "ranges" }, data.ranges.map((r) => {
      const rect = rangeRect(r, scale);
      if (!(r.end > scale.from && r.start < scale.to)) rect.setAttribute("visibility", "hidden");
      return rect;
    }));
    svg.append(bars);
    if (data.valid_range) {
      const [vs, ve] = data.valid_range;
      const x1 = Math.max(scale.x(vs), 0);
      const x2 = Math.min(scale.x(ve), scale.width);
      if (x2 > x1) svg.append(s("line", { class: "valid", x1, x2, y1: VALID_Y, y2: VALID_Y, "data-start": vs, "data-end": ve }));
    }
  }
  if (selected != null && selected >= scale.from && selected <= scale.to) {
    const x = scale.x(selected);
    svg.append(s("line", { class: "selected", x1: x, x2: x, y1: 0, y2: ROW_H }));
  }
  svg.append(s("line", { class: "cursor", x1: -10, x2: -10, y1: 0, y2: ROW_H, visibility: "hidden" }));
}

export function moveCursor(svg, x) {
  const cursor = svg.querySelector("line.cursor");
  if (!cursor) return;
  if (x == null) {
    cursor.setAttribute("visibility", "hidden");
    return;
  }
  cursor.setAttribute("x1", x);
  cursor.setAttribute("x2", x);
  cursor.setAttribute("visibility", "visible");
}

/** The range of `data` holding `position` (ranges are half-open and sorted). */
export function rangeAt(data, position) {
  if (!data) return null;
  return data.ranges.find((r) => position >= r.start && position < r.end) || null;
}
