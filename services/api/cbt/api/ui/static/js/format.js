// Pure formatting of positions, ranges, durations and times. No DOM: unit-tested with node (tests/unit/ui).
//
// A position is an integer. When the model's interval type is time-like (unix seconds) it is shown as a UTC time;
// otherwise as a plain number. Ranges are half-open [start, end).

const pad = (n) => String(n).padStart(2, "0");

/** The set of interval types whose positions are unix seconds, from the page's data-time-types attribute. */
export function parseTimeTypes(text) {
  return new Set(String(text || "").split(",").map((t) => t.trim().toLowerCase()).filter(Boolean));
}

export function isTimeType(intervalType, timeTypes) {
  return intervalType != null && timeTypes.has(String(intervalType).trim().toLowerCase());
}

export function utcDate(seconds) {
  const d = new Date(seconds * 1000);
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
}

export function utcTime(seconds, withSeconds = true) {
  const d = new Date(seconds * 1000);
  const hm = `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}`;
  return withSeconds ? `${hm}:${pad(d.getUTCSeconds())}` : hm;
}

/** "2023-11-14 22:13:20" (UTC). */
export function formatUtc(seconds) {
  return `${utcDate(seconds)} ${utcTime(seconds)}`;
}

export function formatNumber(n) {
  if (n == null || Number.isNaN(Number(n))) return "—";
  return Number(n).toLocaleString("en-US", { maximumFractionDigits: 2 });
}

/** A position as a time (UTC) or a number. */
export function formatPosition(position, isTime) {
  if (position == null) return "—";
  return isTime ? `${formatUtc(position)} UTC` : formatNumber(position);
}

/** A half-open range; the end's date is left out when it is the start's. */
export function formatRange(start, end, isTime) {
  if (start == null || end == null) return "—";
  if (!isTime) return `[${formatNumber(start)}, ${formatNumber(end)})`;
  const sameDay = utcDate(start) === utcDate(end);
  return `${formatUtc(start)} → ${sameDay ? utcTime(end) : formatUtc(end)} UTC`;
}

/** 0 → "0s", 75 → "1m 15s", 3700 → "1h 1m", 90000 → "1d 1h". */
export function formatDuration(totalSeconds) {
  if (totalSeconds == null || Number.isNaN(Number(totalSeconds))) return "—";
  let s = Math.round(Math.abs(Number(totalSeconds)));
  const sign = Number(totalSeconds) < 0 ? "-" : "";
  const days = Math.floor(s / 86400); s -= days * 86400;
  const hours = Math.floor(s / 3600); s -= hours * 3600;
  const minutes = Math.floor(s / 60); s -= minutes * 60;
  let text;
  if (days) text = `${days}d${hours ? ` ${hours}h` : ""}`;
  else if (hours) text = `${hours}h${minutes ? ` ${minutes}m` : ""}`;
  else if (minutes) text = `${minutes}m${s ? ` ${s}s` : ""}`;
  else text = `${s}s`;
  return sign + text;
}

/** A length of positions: a duration for time types, else a count. */
export function formatSpan(positions, isTime) {
  if (positions == null) return "—";
  if (isTime) return formatDuration(positions);
  return `${formatNumber(positions)} position${Number(positions) === 1 ? "" : "s"}`;
}

export function formatMs(ms) {
  if (ms == null) return "—";
  return `${formatUtc(Math.floor(Number(ms) / 1000))} UTC`;
}

export function formatMillis(ms) {
  if (ms == null) return "—";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
  return formatDuration(ms / 1000);
}

/** "12s ago", "3m ago"; future times as "in 5s". */
export function formatAgo(ms, nowMs = Date.now()) {
  if (ms == null) return "—";
  const seconds = Math.round((nowMs - Number(ms)) / 1000);
  if (Math.abs(seconds) < 1) return "just now";
  return seconds > 0 ? `${formatDuration(seconds)} ago` : `in ${formatDuration(-seconds)}`;
}

/** A model's lag: seconds when its positions are time, positions otherwise; null when unknown. */
export function formatLag(lag, lagSeconds, isTime) {
  if (isTime && lagSeconds != null) return formatDuration(lagSeconds);
  if (lag == null) return null;
  return isTime ? formatDuration(lag) : formatNumber(lag);
}

/** "analytics.block_propagation_minute" → ["analytics", "block_propagation_minute"]. */
export function splitModelId(id) {
  const dot = String(id).indexOf(".");
  return dot < 0 ? ["", String(id)] : [id.slice(0, dot), id.slice(dot + 1)];
}
