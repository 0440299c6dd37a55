// The dashboard's "scheduled models" lines, pure: what to say about a model's last and next run, from
// /api/v1/schedules (the api evaluates the schedules; nothing here knows cron). No DOM: unit-tested with node.

import { formatDuration, formatMillis, formatUtc } from "./format.js";

/** The last run: "2023-11-14 22:13:00 UTC · success · 1.20 s", or "never ran". */
export function lastRunText(run) {
  if (!run) return "never ran";
  const took = run.duration_ms ? ` · ${formatMillis(run.duration_ms)}` : "";
  return `${formatUtc(run.scheduled_unix)} UTC · ${run.status}${took}`;
}

/**
 * The next run at `nowUnix` (the api's now_unix plus the seconds since it answered): "in 40s · 22:14:00 UTC",
 * "due now (since 22:10:00 UTC)" when the time has passed, or "paused" when an override disabled the model.
 */
export function nextRunText(item, nowUnix) {
  if (!item.enabled || item.next_unix == null) return "paused";
  const at = formatUtc(item.next_unix);
  const sameDay = at.slice(0, 10) === formatUtc(nowUnix).slice(0, 10);
  const shown = `${sameDay ? at.slice(11) : at} UTC`;
  const wait = item.next_unix - nowUnix;
  return wait > 0 ? `in ${formatDuration(wait)} · ${shown}` : `due now (since ${shown})`;
}
