// The model filter of the list pages: a <select> of every model id, kept in the URL (?model=).

import { getJSON } from "./api.js";
import { h } from "./dom.js";

/** Fills the select; calls onChange(modelId or "") when it changes. Returns {value(), types: id → interval type}. */
export async function modelFilter(select, onChange) {
  const models = await getJSON("/models").then((b) => b.models).catch(() => []);
  for (const m of [...models].sort((a, b) => a.id.localeCompare(b.id))) select.append(h("option", { value: m.id }, m.id));
  const initial = new URLSearchParams(location.search).get("model") || "";
  select.value = initial;
  select.addEventListener("change", () => {
    const url = new URL(location.href);
    if (select.value) url.searchParams.set("model", select.value);
    else url.searchParams.delete("model");
    history.replaceState(null, "", url);
    onChange(select.value);
  });
  return { value: () => select.value, types: new Map(models.map((m) => [m.id, m.interval_type])) };
}
