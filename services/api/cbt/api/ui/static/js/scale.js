// Pure maths of the timeline's x axis: a linear scale from positions to pixels, zoom and pan of a window, and
// "nice" ticks (aligned to UTC minutes/hours/days for time types, to 1-2-5 steps otherwise). No DOM.

/** The narrowest window zooming allows (positions). */
export const MIN_SPAN = 4;

/** Maps positions in [from, to) onto pixels [0, width]. */
export function makeScale(from, to, width) {
  const span = Math.max(to - from, 1e-9);
  const k = width / span;
  return {
    from, to, width,
    x: (position) => (position - from) * k,
    position: (x) => from + x / k,
  };
}

/** Zoom by `factor` (< 1 zooms in) keeping `anchor` (a position) where it is on screen. */
export function zoomWindow([from, to], factor, anchor) {
  const span = to - from;
  const newSpan = Math.max(span * factor, MIN_SPAN);
  const a = anchor ?? (from + to) / 2;
  const ratio = span > 0 ? (a - from) / span : 0.5;
  const newFrom = a - ratio * newSpan;
  return clampWindow([newFrom, newFrom + newSpan]);
}

/** Pan by a fraction of the window's width (negative: towards older positions). */
export function panWindow([from, to], fraction) {
  return shiftWindow([from, to], (to - from) * fraction);
}

export function shiftWindow([from, to], delta) {
  return clampWindow([from + delta, to + delta]);
}

/** Positions are non-negative: a window never starts before 0. */
export function clampWindow([from, to]) {
  if (from >= 0) return [from, to];
  return [0, to - from];
}

/** The integer window a coverage request asks for: [floor(from), ceil(to)), at least one position wide. */
export function integerWindow([from, to]) {
  const start = Math.max(0, Math.floor(from));
  return [start, Math.max(Math.ceil(to), start + 1)];
}

/** The smallest window holding every given [start, end] (nulls skipped); null when there is none. */
export function unionExtent(spans) {
  let lo = Infinity;
  let hi = -Infinity;
  for (const span of spans) {
    if (!span || span[0] == null || span[1] == null) continue;
    lo = Math.min(lo, span[0]);
    hi = Math.max(hi, span[1]);
  }
  if (!Number.isFinite(lo) || !Number.isFinite(hi)) return null;
  return hi > lo ? [lo, hi] : [lo, lo + 1];
}

const TIME_STEPS = [
  1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200,
  86400, 172800, 604800, 2592000, 7776000, 31536000,
];

function numberStep(span, maxTicks) {
  const raw = span / Math.max(maxTicks, 1);
  const magnitude = 10 ** Math.floor(Math.log10(Math.max(raw, 1e-9)));
  for (const m of [1, 2, 5, 10]) {
    if (m * magnitude >= raw) return Math.max(1, m * magnitude);
  }
  return Math.max(1, 10 * magnitude);
}

function timeStep(span, maxTicks) {
  return TIME_STEPS.find((step) => span / step <= maxTicks) ?? TIME_STEPS[TIME_STEPS.length - 1];
}

/** Tick positions for [from, to): at most about `maxTicks`, on multiples of a round step. */
export function tickValues(from, to, maxTicks, isTime) {
  const span = to - from;
  if (!(span > 0)) return { step: 1, values: [] };
  const step = isTime ? timeStep(span, maxTicks) : numberStep(span, maxTicks);
  const values = [];
  for (let v = Math.ceil(from / step) * step; v <= to; v += step) values.push(v);
  return { step, values };
}

const pad = (n) => String(n).padStart(2, "0");

/** A tick's label: UTC time (with the date at midnight and for day steps) or a number. */
export function tickLabel(value, step, isTime) {
  if (!isTime) return value.toLocaleString("en-US");
  const d = new Date(value * 1000);
  const date = `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
  if (step >= 86400) return date;
  const hm = `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}`;
  if (value % 86400 === 0) return `${date.slice(5)} ${hm}`;
  return step < 60 ? `${hm}:${pad(d.getUTCSeconds())}` : hm;
}
