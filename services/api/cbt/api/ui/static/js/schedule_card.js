// The dashboard's card of scheduled models: schedule, last run and next run of each (from /api/v1/schedules, where
// the api evaluates the schedules). The "next run" countdown ticks every second; the card re-reads the api when one
// of its models reports an event and shortly after a next run comes due.

import { getJSON, problemBox } from "./api.js";
import { h, modelLink, show, table } from "./dom.js";
import { lastRunText, nextRunText } from "./schedules.js";

const TICK_MS = 1000;
const DUE_RELOAD_MS = 5000;

export class ScheduleCard {
  constructor(card, body) {
    this.card = card;
    this.body = body;
    this.data = null;
    this.fetchedAtMs = 0;
    this.lastReloadMs = 0;
    this.ids = new Set();
    setInterval(() => this.tick(), TICK_MS);
  }

  nowUnix() {
    return this.data.now_unix + Math.floor((Date.now() - this.fetchedAtMs) / 1000);
  }

  async load() {
    this.lastReloadMs = Date.now();
    try {
      this.data = await getJSON("/schedules");
      this.fetchedAtMs = Date.now();
    } catch (error) {
      this.card.hidden = false;
      show(this.body, problemBox(error));
      return;
    }
    this.ids = new Set(this.data.models.map((m) => m.model));
    this.card.hidden = !this.data.models.length;
    this.render();
  }

  render() {
    const now = this.nowUnix();
    show(this.body, table([
      { label: "Model", cell: (m) => modelLink(m.model) },
      { label: "Schedule", cell: (m) => h("code", {}, m.schedule) },
      { label: "Last run", cell: (m) => h("span", { class: `last-run ${m.last_run?.status || "never"}` }, lastRunText(m.last_run)) },
      { label: "Next run", cell: (m) => h("span", { class: "next-run", "data-model": m.model }, nextRunText(m, now)) },
    ], this.data.models, { "aria-label": "Scheduled models" }));
  }

  tick() {
    if (!this.data) return;
    const now = this.nowUnix();
    const byModel = new Map(this.data.models.map((m) => [m.model, m]));
    for (const el of this.body.querySelectorAll(".next-run")) el.textContent = nextRunText(byModel.get(el.dataset.model), now);
    const isDue = this.data.models.some((m) => m.enabled && m.next_unix != null && m.next_unix <= now);
    if (isDue && Date.now() - this.lastReloadMs > DUE_RELOAD_MS) this.load();
  }

  /** An event about a model: re-read when it is one of the scheduled models. */
  concerns(model) {
    return this.ids.has(model);
  }
}
