// Live updates: one EventSource on /api/v1/events (pushed from Kafka by the api service; nothing polls). The nav
// bar's indicator shows whether the stream is connected.

const EVENTS = ["interval-completed", "task-failed", "invalidation", "bounds-updated", "task-requested"];
const BASE = document.body?.dataset.api || "/api/v1";

function setState(state, text) {
  const el = document.getElementById("live");
  if (!el) return;
  el.dataset.state = state;
  el.querySelector(".live-text").textContent = text;
}

/**
 * Calls onEvent(name, data) for each pushed event and onReconnect() when the stream comes back after a drop (events
 * may have been missed meanwhile, so a page reloads its data then).
 */
export function connectEvents(onEvent, onReconnect = () => {}) {
  let source = null;
  let dropped = false;
  const open = () => {
    source = new EventSource(`${BASE}/events`);
    source.addEventListener("open", () => {
      setState("live", "live");
      if (dropped) onReconnect();
      dropped = false;
    });
    source.addEventListener("error", () => {
      dropped = true;
      if (source.readyState === EventSource.CLOSED) {
        setState("reconnecting", "offline, retrying");
        setTimeout(open, 5000);
      } else {
        setState("reconnecting", "reconnecting");
      }
    });
    for (const name of EVENTS) {
      source.addEventListener(name, (event) => {
        let data = null;
        try { data = JSON.parse(event.data); } catch { return; }
        onEvent(name, data || {});
      });
    }
  };
  open();
  window.addEventListener("beforeunload", () => source?.close());
}

/** Collects keys and calls flush(keys) at most once per `ms` (events come in bursts during a backfill). */
export function batcher(flush, ms) {
  let pending = new Set();
  let timer = null;
  return (...keys) => {
    for (const key of keys) pending.add(key);
    if (timer) return;
    timer = setTimeout(() => {
      const keysNow = pending;
      pending = new Set();
      timer = null;
      flush(keysNow);
    }, ms);
  };
}
