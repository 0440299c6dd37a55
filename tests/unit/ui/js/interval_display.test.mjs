// The UI's evaluation of compiled interval_types expressions: the same numbers and texts as cbt.config.interval_types
// (tests/unit/test_config_interval_types.py uses the same vectors).
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  evaluate, formatShown, showOne, showPosition, shownText,
} from "../../../../services/api/cbt/api/ui/static/js/interval_display.js";

const GENESIS = 1606824023;
const TIME = { name: "Time", program: ["*", ["+", ["*", "value", 12], GENESIS], 1000], format: "datetime" };

test("compiled expressions evaluate with Python's // and % (floor)", () => {
  assert.equal(evaluate(["floor", ["/", ["-", "value", GENESIS], 12]], GENESIS + 12 * 5 + 11), 5);
  assert.equal(evaluate(["//", ["neg", "value"], 32], 1), -1);
  assert.equal(evaluate(["%", ["neg", "value"], 32], 1), 31);
  assert.equal(evaluate(["max", ["-", "value", 32], 0], 10), 0);
  assert.equal(evaluate(["round", ["/", "value", 4]], 2), 0); // 0.5 rounds to even
  assert.equal(evaluate(["round", ["/", "value", 4]], 6), 2);
  assert.throws(() => evaluate(["pow", "value", 2], 3), /not a compiled expression/);
  assert.throws(() => evaluate(["/", 1, ["-", "value", 3]], 3), /division by zero/);
});

test("formats read milliseconds as CBT's do, numbers get separators", () => {
  const now = (GENESIS + 100 * 12 + 90) * 1000;
  const at = (GENESIS + 100 * 12) * 1000;
  assert.equal(formatShown(at, "datetime"), "2020-12-01 12:20:23 UTC");
  assert.equal(formatShown(at, "date"), "2020-12-01");
  assert.equal(formatShown(at, "time"), "12:20:23 UTC");
  assert.equal(formatShown(at, "relative", now), "1m 30s ago");
  assert.equal(formatShown(1200000, "duration"), "20m");
  assert.equal(formatShown(1234567, "number"), "1,234,567");
  assert.equal(formatShown(1234567, undefined), "1,234,567");
});

test("a position is shown by each transformation, labelled; one that cannot compute it is left out", () => {
  const types = [TIME, { name: "Epoch", program: ["//", "value", 32], label: "epoch {value}" },
    { name: "Broken", program: ["/", 1, ["-", "value", 100]] }];
  assert.deepEqual(showPosition(100, types, 0), [
    { name: "Time", text: "2020-12-01 12:20:23 UTC" }, { name: "Epoch", text: "epoch 3" }, { name: "Broken", text: null }]);
  assert.equal(shownText(100, types, 0), "Time 2020-12-01 12:20:23 UTC · epoch 3");
  assert.equal(showOne(7, { name: "Position" }), "7");
  assert.equal(shownText(null, types), "");
});

test("a slot axis is labelled with the slots' times, spaced for the longer labels; a time axis keeps its own", async () => {
  const { makeScale } = await import("../../../../services/api/cbt/api/ui/static/js/scale.js");
  const { ticksFor } = await import("../../../../services/api/cbt/api/ui/static/js/timeline.js");
  const scale = makeScale(0, 1000, 900);
  const plain = ticksFor(scale, false);
  assert.equal(plain.find((t) => t.value === 200).label, "200");
  const shown = ticksFor(scale, false, [TIME, { name: "Epoch", program: ["//", "value", 32] }]);
  assert.ok(shown.length >= 2 && shown.length < plain.length, `${shown.length} of ${plain.length}`);
  for (const tick of shown) assert.equal(tick.label, showOne(tick.value, TIME));
  assert.equal(shown.find((t) => t.value === 0).label, "2020-12-01 12:00:23 UTC");
  const broken = ticksFor(scale, false, [{ name: "Broken", program: ["/", 1, "value"] }]);
  assert.equal(broken[0].label, "0", "a position the form cannot show stays a number");
  const time = ticksFor(makeScale(1699920000, 1699920000 + 3600, 900), true, [TIME]);
  assert.equal(time[0].label, "11-14 00:00");
});
