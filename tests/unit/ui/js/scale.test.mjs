// The timeline's x axis: scale, zoom, pan, integer windows and ticks.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  MIN_SPAN, integerWindow, makeScale, panWindow, tickLabel, tickValues, unionExtent, zoomWindow,
} from "../../../../services/api/cbt/api/ui/static/js/scale.js";

test("the scale maps the window onto the pixels and back", () => {
  const scale = makeScale(1000, 2000, 500);
  assert.equal(scale.x(1000), 0);
  assert.equal(scale.x(1500), 250);
  assert.equal(scale.position(500), 2000);
});

test("zooming keeps the anchor where it is on screen", () => {
  const [from, to] = zoomWindow([0, 1000], 0.5, 800);
  assert.equal(to - from, 500);
  assert.equal((800 - from) / (to - from), 0.8);
});

test("zooming in stops at the narrowest window", () => {
  const [from, to] = zoomWindow([100, 110], 0.01, 105);
  assert.equal(to - from, MIN_SPAN);
});

test("panning moves by a fraction of the width and never before position 0", () => {
  assert.deepEqual(panWindow([100, 200], 0.25), [125, 225]);
  assert.deepEqual(panWindow([10, 110], -0.5), [0, 100]);
});

test("a coverage request asks for whole positions, at least one", () => {
  assert.deepEqual(integerWindow([10.2, 19.1]), [10, 20]);
  assert.deepEqual(integerWindow([5, 5]), [5, 6]);
  assert.deepEqual(integerWindow([-3.5, 4]), [0, 4]);
});

test("the extent of spans skips missing ones", () => {
  assert.deepEqual(unionExtent([[10, 20], null, [5, 12], [null, 3]]), [5, 20]);
  assert.equal(unionExtent([null, undefined]), null);
});

test("time ticks fall on round UTC steps", () => {
  const T0 = 1700000400; // 22:20:00
  const { step, values } = tickValues(T0 + 7, T0 + 900, 8, true);
  assert.equal(step, 120);
  assert.ok(values.every((v) => v % 120 === 0 && v >= T0 + 7 && v <= T0 + 900));
  assert.equal(tickLabel(T0, 120, true), "22:20");
  assert.equal(tickLabel(T0 + 5, 5, true), "22:20:05");
  assert.equal(tickLabel(1699920000, 3600, true), "11-14 00:00");
});

test("number ticks use 1-2-5 steps", () => {
  const { step, values } = tickValues(0, 1000, 5, false);
  assert.equal(step, 200);
  assert.deepEqual(values, [0, 200, 400, 600, 800, 1000]);
  assert.equal(tickLabel(12000, 2000, false), "12,000");
});
