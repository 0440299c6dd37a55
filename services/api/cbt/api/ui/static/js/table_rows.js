// The model page's Rows card, for a model marked `expose`: a page of its table from the read API
// (/api/v1/tables/{model}), filtered with the API's own query syntax ("slot_gte=100&slot_lt=200"), in an order, and
// the next page by the token the API returned. The API's refusal (400 and its reason) is shown in the card.

import { getJSON, problemBox } from "./api.js";
import { emptyState, h, show } from "./dom.js";

export const PAGE_SIZE = 25;

/** The query string of one page: the filter text as the API takes it (a leading "?" and spaces around "&" are
 * allowed; a page_token in it is ignored), the order box over any order_by in the text, a page size unless the text
 * names one, and the page token. Empty values are kept: the API says what is wrong with them. Pure. */
export function rowsQuery(filterText, orderBy = "", pageToken = null) {
  const query = new URLSearchParams();
  for (const [key, value] of new URLSearchParams(filterText.trim().replace(/^\?/, ""))) {
    const name = key.trim();
    if (name && name !== "page_token") query.append(name, value.trim());
  }
  if (orderBy.trim()) query.set("order_by", orderBy.trim());
  if (!query.has("page_size")) query.set("page_size", String(PAGE_SIZE));
  if (pageToken) query.set("page_token", pageToken);
  return query.toString();
}

/** The columns of a page: every key of its rows, in the order they first appear. Pure. */
export function rowColumns(rows) {
  const seen = new Set();
  for (const row of rows) for (const key of Object.keys(row)) seen.add(key);
  return [...seen];
}

/** A value as the API sent it: null, text, a number, or JSON for structs, arrays and maps. Pure. */
export function cellText(value) {
  if (value == null) return "null";
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}

function rowsTable(rows) {
  if (!rows.length) return emptyState("No rows", "The table has no rows that match these filters.");
  const columns = rowColumns(rows);
  const cell = (row, column) => {
    const value = row[column];
    return h("td", { "data-column": column, class: typeof value === "number" ? "num mono" : value == null ? "muted" : "mono" },
      cellText(value));
  };
  return h("div", { class: "table-scroll" }, h("table", { class: "data", "data-table": "rows" },
    h("thead", {}, h("tr", {}, columns.map((c) => h("th", { "data-column": c }, c)))),
    h("tbody", {}, rows.map((row) => h("tr", {}, columns.map((c) => cell(row, c)))))));
}

/** Wires the card's form and paging buttons (elements by id in model.html) and loads the first page. */
export function rowsCard(modelId) {
  const el = (id) => document.getElementById(id);
  const [card, form, body, status, next, first] = ["rows-card", "rows-form", "rows", "rows-page", "rows-next", "rows-first"].map(el);
  const state = { token: null, page: 0, seq: 0, filter: "", order: "" };
  const path = `/tables/${encodeURIComponent(modelId)}`;

  async function load(token) {
    const seq = ++state.seq;
    body.setAttribute("aria-busy", "true");
    next.disabled = true;
    const query = rowsQuery(state.filter, state.order, token); // a token is valid only for the query that made it
    try {
      const answer = await getJSON(`${path}?${query}`);
      if (seq !== state.seq) return;
      state.page = token ? state.page + 1 : 1;
      state.token = answer.next_page_token || null;
      show(body, rowsTable(answer.rows || []));
      status.textContent = `page ${state.page} · ${answer.rows.length} row${answer.rows.length === 1 ? "" : "s"}`
        + ` · table version ${answer.version}${state.token ? "" : " · last page"}`;
    } catch (error) {
      if (seq !== state.seq) return;
      Object.assign(state, { token: null, page: 0 });
      show(body, problemBox(error));
      status.textContent = "";
    }
    body.dataset.page = String(state.page);
    next.disabled = !state.token;
    first.disabled = state.page <= 1;
  }

  card.hidden = false;
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    Object.assign(state, { filter: form.elements.filter.value, order: form.elements.order_by.value });
    load(null);
  });
  next.addEventListener("click", () => state.token && load(state.token));
  first.addEventListener("click", () => load(null));
  load(null);
}
