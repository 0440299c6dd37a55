// Invalidations page: every accepted invalidation and what it removed from coverage (/api/v1/invalidations). Live.

import { getJSON, problemBox } from "../api.js";
import { byId, show } from "../dom.js";
import { isTimeType, parseTimeTypes } from "../format.js";
import { batcher, connectEvents } from "../live.js";
import { invalidationsView } from "../sections.js";
import { modelFilter } from "../filter.js";

const timeTypes = parseTimeTypes(document.body.dataset.timeTypes);
const root = byId("invalidations");

async function load(model, types) {
  try {
    const list = (await getJSON("/invalidations", { model })).invalidations;
    list.sort((a, b) => (b.created_at_ms ?? 0) - (a.created_at_ms ?? 0));
    // One table, one axis format: times when every listed model's positions are unix seconds.
    const isTime = list.length > 0 && list.every((i) => isTimeType(types.get(i.model), timeTypes));
    show(root, invalidationsView(list, isTime));
    root.dataset.loaded = "true";
  } catch (error) {
    show(root, problemBox(error));
  }
}

let filter = null;
const reload = batcher(() => filter && load(filter.value(), filter.types), 1000);
connectEvents((name) => { if (name === "invalidation") reload("x"); }, () => reload("x"));
filter = await modelFilter(byId("model-filter"), (model) => load(model, filter.types));
await load(filter.value(), filter.types);
