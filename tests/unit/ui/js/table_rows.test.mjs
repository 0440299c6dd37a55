// The model page's Rows card: the query it sends to the read API and the columns it draws.
import assert from "node:assert/strict";
import { test } from "node:test";

import { PAGE_SIZE, cellText, rowColumns, rowsQuery } from "../../../../services/api/cbt/api/ui/static/js/table_rows.js";

test("the filter text is sent as the API takes it, with a page size", () => {
  assert.equal(rowsQuery("slot_gte=100&slot_lt=200"), `slot_gte=100&slot_lt=200&page_size=${PAGE_SIZE}`);
  assert.equal(rowsQuery("?slot_gte=100 & slot_lt=200 ", ""), `slot_gte=100&slot_lt=200&page_size=${PAGE_SIZE}`);
  assert.equal(rowsQuery("", ""), `page_size=${PAGE_SIZE}`);
});

test("the order box wins over an order_by in the text; the text may name its page size", () => {
  assert.equal(rowsQuery("order_by=slot&page_size=5", "slot desc"), "order_by=slot+desc&page_size=5");
  assert.equal(rowsQuery("order_by=-slot", ""), `order_by=-slot&page_size=${PAGE_SIZE}`);
});

test("only the card's token pages; an empty value still reaches the API, which says what is wrong", () => {
  assert.equal(rowsQuery("page_token=stale&slot_gte", "", "tok"), `slot_gte=&page_size=${PAGE_SIZE}&page_token=tok`);
  assert.equal(rowsQuery("root_in_values=a,b"), `root_in_values=a%2Cb&page_size=${PAGE_SIZE}`);
});

test("the columns are every key of the page in first-seen order; values as the API sent them", () => {
  assert.deepEqual(rowColumns([{ slot: 1, root: "a" }, { slot: 2, extra: null }]), ["slot", "root", "extra"]);
  assert.deepEqual(rowColumns([]), []);
  assert.equal(cellText(null), "null");
  assert.equal(cellText({ a: [1] }), '{"a":[1]}');
  assert.equal(cellText(12.5), "12.5");
  assert.equal(cellText(false), "false");
});
