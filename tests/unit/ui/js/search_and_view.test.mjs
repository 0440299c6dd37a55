// Model search (header and DAG), the DAG's viewport maths and its left-to-right layout, the theme's resolution and
// the dashboard's last/next run lines (run by tests/unit/ui/test_js.py with node's test runner).
import assert from "node:assert/strict";
import { test } from "node:test";

import { layoutDag, routePath } from "../../../../services/api/cbt/api/ui/static/js/dag_layout.js";
import { centreOn, fitView, panBy, viewBox, zoomAt } from "../../../../services/api/cbt/api/ui/static/js/dag_view.js";
import { lastRunText, nextRunText } from "../../../../services/api/cbt/api/ui/static/js/schedules.js";
import { matchModels } from "../../../../services/api/cbt/api/ui/static/js/search.js";
import { parseChoice, resolveTheme } from "../../../../services/api/cbt/api/ui/static/js/theme.js";

const IDS = ["ethereum.beacon_blocks", "analytics.block_propagation", "analytics.blocks_hourly", "analytics.hourly_gas"];

test("search finds ids containing the query, case-insensitively, best matches first", () => {
  assert.deepEqual(matchModels(IDS, "BLOCK"), ["analytics.block_propagation", "analytics.blocks_hourly", "ethereum.beacon_blocks"]);
  assert.deepEqual(matchModels(IDS, "hourly"), ["analytics.hourly_gas", "analytics.blocks_hourly"]);
  assert.deepEqual(matchModels(IDS, "analytics.hourly_gas"), ["analytics.hourly_gas"]);
  assert.deepEqual(matchModels(IDS, "  "), []);
  assert.deepEqual(matchModels(IDS, "nothing"), []);
  assert.equal(matchModels(IDS, "a", 2).length, 2);
});

test("the DAG view fits the drawing, zooms about a point and centres on a model", () => {
  const fit = fitView(2000, 500, 1000, 500);
  assert.deepEqual(fit, { cx: 1000, cy: 250, k: 0.5 });
  assert.equal(viewBox(fit, 1000, 500), "0 -250 2000 1000");
  assert.deepEqual(fitView(100, 100, 1000, 500).k, 1, "a small drawing is not magnified");
  const zoomed = zoomAt(fit, 2, 0, 0, 1000, 500); // the top-left corner stays put
  assert.equal(viewBox(zoomed, 1000, 500), "0 -250 1000 500");
  assert.deepEqual(panBy({ cx: 100, cy: 100, k: 2 }, 20, -10), { cx: 90, cy: 105, k: 2 });
  assert.deepEqual(centreOn({ x: 300, y: 40, w: 200, h: 54 }, 1.4), { cx: 400, cy: 67, k: 1.4 });
  assert.equal(centreOn({ x: 0, y: 0, w: 2, h: 2 }, 99).k, 2.5, "zoom is bounded");
});

test("left to right, ranks are columns: sources on the left, edges flow right", () => {
  const nodes = [{ id: "s.a", rank: 0 }, { id: "s.b", rank: 0 }, { id: "t.c", rank: 1 }];
  const edges = [{ from: "s.a", to: "t.c", or_group: null }, { from: "s.b", to: "t.c", or_group: null }];
  const tb = layoutDag(nodes, edges, 200);
  const lr = layoutDag(nodes, edges, 200, "LR");
  assert.equal(lr.direction, "LR");
  assert.ok(lr.boxes.get("s.a").x + 200 < lr.boxes.get("t.c").x);
  assert.equal(lr.boxes.get("s.a").x, lr.boxes.get("s.b").x);
  assert.ok(lr.boxes.get("s.a").y < lr.boxes.get("s.b").y);
  assert.ok(tb.boxes.get("s.a").y < tb.boxes.get("t.c").y && tb.boxes.get("s.a").x !== tb.boxes.get("s.b").x);
  assert.ok(lr.width > lr.height && tb.height > lr.height);
  assert.equal(routePath([{ x: 0, y: 0 }, { x: 100, y: 40 }], "LR"), "M0,0 C50,0 50,40 100,40");
  assert.equal(routePath([{ x: 0, y: 0 }, { x: 100, y: 0 }], "LR"), "M0,0 L100,0");
});

test("an OR junction sits left of its dependent when left to right", () => {
  const nodes = [{ id: "s.a", rank: 0 }, { id: "s.b", rank: 0 }, { id: "t.x", rank: 1 }];
  const edges = [{ from: "s.a", to: "t.x", or_group: 0 }, { from: "s.b", to: "t.x", or_group: 0 }];
  const { boxes, junctions } = layoutDag(nodes, edges, 200, "LR");
  assert.equal(junctions.length, 1);
  assert.ok(junctions[0].x < boxes.get("t.x").x && junctions[0].x > boxes.get("s.a").x + 200);
});

test("the theme follows the system unless light or dark is chosen", () => {
  assert.equal(resolveTheme("system", true), "dark");
  assert.equal(resolveTheme("system", false), "light");
  assert.equal(resolveTheme("light", true), "light");
  assert.equal(resolveTheme("dark", false), "dark");
  assert.equal(resolveTheme(null, true), "dark");
  assert.equal(parseChoice("purple"), "system");
});

test("the dashboard says when a scheduled model ran and when it runs next", () => {
  const now = 1700000000; // 2023-11-14 22:13:20 UTC
  const run = { scheduled_unix: now - 20, status: "success", duration_ms: 1200 };
  assert.equal(lastRunText(run), "2023-11-14 22:13:00 UTC · success · 1.20 s");
  assert.equal(lastRunText(null), "never ran");
  assert.equal(nextRunText({ enabled: true, next_unix: now + 40 }, now), "in 40s · 22:14:00 UTC");
  assert.equal(nextRunText({ enabled: true, next_unix: now + 86400 }, now), "in 1d · 2023-11-15 22:13:20 UTC");
  assert.equal(nextRunText({ enabled: true, next_unix: now - 80 }, now), "due now (since 22:12:00 UTC)");
  assert.equal(nextRunText({ enabled: false, next_unix: null }, now), "paused");
});
