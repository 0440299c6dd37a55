// How a position of an interval type is shown (config interval_types, served by /api/v1/interval-types). Pure: no
// DOM, no fetch (run by tests/unit/ui/test_js.py with node's test runner).
//
// The server parses each expression (cbt.config.position_expr) and sends it compiled: a number, "value", or
// [operator_or_function, ...operands]. This only evaluates that tree, with Python's semantics for // and %, then
// formats the result (datetime/date/time/relative read milliseconds since the epoch, duration milliseconds, as in
// the original CBT) and fills the label's {value}.

import { formatDuration, formatNumber, utcDate, utcTime } from "./format.js";

const OPS = {
  "+": (a, b) => a + b,
  "-": (a, b) => a - b,
  "*": (a, b) => a * b,
  "/": (a, b) => { if (b === 0) throw new Error("division by zero"); return a / b; },
  "//": (a, b) => { if (b === 0) throw new Error("division by zero"); return Math.floor(a / b); },
  "%": (a, b) => { if (b === 0) throw new Error("division by zero"); return a - b * Math.floor(a / b); },
  neg: (a) => -a,
  floor: Math.floor,
  ceil: Math.ceil,
  round: (a) => { const r = Math.round(a); return Math.abs(a % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r; }, // half to even, as Python
  abs: Math.abs,
  min: Math.min,
  max: Math.max,
};

/** The compiled expression at `value`; throws on an unknown operator or a division by zero. */
export function evaluate(program, value) {
  if (program === "value") return value;
  if (typeof program === "number") return program;
  if (!Array.isArray(program) || !(program[0] in OPS)) throw new Error(`not a compiled expression: ${JSON.stringify(program)}`);
  const [op, ...args] = program;
  return OPS[op](...args.map((a) => evaluate(a, value)));
}

/** A transformed number in its format. */
export function formatShown(number, format, nowMs = Date.now()) {
  if (format === "datetime" || format === "date" || format === "time") {
    const seconds = Math.floor(number / 1000);
    if (!Number.isFinite(seconds) || Math.abs(number) > 8.64e15) throw new Error(`${number} is not a time in milliseconds`);
    if (format === "date") return utcDate(seconds);
    if (format === "time") return `${utcTime(seconds)} UTC`;
    return `${utcDate(seconds)} ${utcTime(seconds)} UTC`;
  }
  if (format === "duration") return formatDuration(number / 1000);
  if (format === "relative") {
    const seconds = (nowMs - number) / 1000;
    return seconds >= 0 ? `${formatDuration(seconds)} ago` : `in ${formatDuration(-seconds)}`;
  }
  return formatNumber(number);
}

/** One transformation of a position: its text, or null when it cannot be computed. */
export function showOne(position, transformation, nowMs = Date.now()) {
  try {
    const text = formatShown(evaluate(transformation.program ?? "value", position), transformation.format, nowMs);
    return transformation.label ? transformation.label.replace("{value}", text) : text;
  } catch {
    return null;
  }
}

/** Every transformation of a position: [{name, text}] (text null when it cannot be computed). */
export function showPosition(position, transformations, nowMs = Date.now()) {
  return (transformations || []).map((t) => ({ name: t.name, text: showOne(position, t, nowMs) }));
}

/** "Time 2020-12-01 12:00:23 UTC · epoch 5": the forms of a position on one line, each after its name unless a
 * label says what it is ("" when there are none). */
export function shownText(position, transformations, nowMs = Date.now()) {
  if (position == null) return "";
  return (transformations || []).map((t) => [t, showOne(position, t, nowMs)])
    .filter(([, text]) => text != null).map(([t, text]) => (t.label ? text : `${t.name} ${text}`)).join(" · ");
}
