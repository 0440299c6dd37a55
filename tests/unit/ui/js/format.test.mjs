// Pure formatting used by every page (run by tests/unit/ui/test_js.py with node's test runner).
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  formatDuration, formatLag, formatPosition, formatRange, formatSpan, formatUtc, isTimeType, parseTimeTypes, splitModelId,
} from "../../../../services/api/cbt/api/ui/static/js/format.js";

const T0 = 1700000400; // 2023-11-14 22:20:00 UTC

test("time types are read case-insensitively from the page's list", () => {
  const types = parseTimeTypes("timestamp, Unix ,epoch,");
  assert.equal(isTimeType("TIMESTAMP", types), true);
  assert.equal(isTimeType("unix", types), true);
  assert.equal(isTimeType("slot", types), false);
  assert.equal(isTimeType(null, types), false);
});

test("positions of a time type are shown as UTC, others as numbers", () => {
  assert.equal(formatUtc(T0), "2023-11-14 22:20:00");
  assert.equal(formatPosition(T0, true), "2023-11-14 22:20:00 UTC");
  assert.equal(formatPosition(1234567, false), "1,234,567");
});

test("a half-open range drops the end's date when it is the start's", () => {
  assert.equal(formatRange(T0, T0 + 60, true), "2023-11-14 22:20:00 → 22:21:00 UTC");
  assert.equal(formatRange(T0, T0 + 86400, true), "2023-11-14 22:20:00 → 2023-11-15 22:20:00 UTC");
  assert.equal(formatRange(100, 200, false), "[100, 200)");
});

for (const [seconds, text] of [[0, "0s"], [45, "45s"], [75, "1m 15s"], [3600, "1h"], [3700, "1h 1m"], [90000, "1d 1h"], [-30, "-30s"]]) {
  test(`duration ${seconds}s reads ${text}`, () => assert.equal(formatDuration(seconds), text));
}

test("spans and lags follow the interval type", () => {
  assert.equal(formatSpan(120, true), "2m");
  assert.equal(formatSpan(1, false), "1 position");
  assert.equal(formatSpan(32, false), "32 positions");
  assert.equal(formatLag(24, 24, true), "24s");
  assert.equal(formatLag(5, null, false), "5");
  assert.equal(formatLag(null, null, true), null);
});

test("model ids split at the first dot", () => {
  assert.deepEqual(splitModelId("analytics.block_gas"), ["analytics", "block_gas"]);
  assert.deepEqual(splitModelId("plain"), ["", "plain"]);
});
