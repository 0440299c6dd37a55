// Pure layered layout of the DAG: one row per rank (0 = sources, at the top), or one column per rank (sources on the
// left), nodes ordered inside a rank by the barycentre of their neighbours (a few sweeps, which removes most
// crossings in a small DAG), OR groups drawn through a junction just before their dependent. No DOM: unit-tested with node (tests/unit/ui).

export const NODE_H = 54;
const MIN_NODE_W = 180;
const MAX_NODE_W = 270;
const RANK_GAP = 64;
const NODE_GAP = 26;
const MARGIN_X = 104;
const MARGIN_Y = 34;
const SWEEPS = 6;

/** A node wide enough for the longest title (about 7.4 px a character at 13 px), within bounds. */
export function nodeWidth(titles) {
  const longest = Math.max(0, ...titles.map((t) => String(t).length));
  return Math.min(MAX_NODE_W, Math.max(MIN_NODE_W, Math.ceil(longest * 7.4) + 34));
}

function columnsByRank(nodes) {
  const columns = new Map();
  for (const node of nodes) {
    const rank = Number.isInteger(node.rank) && node.rank >= 0 ? node.rank : 0;
    if (!columns.has(rank)) columns.set(rank, []);
    columns.get(rank).push(node.id);
  }
  const ranks = [...columns.keys()].sort((a, b) => a - b);
  return ranks.map((rank) => ({ rank, ids: columns.get(rank).sort() }));
}

function neighbourMaps(edges) {
  const up = new Map();
  const down = new Map();
  for (const e of edges) {
    if (!up.has(e.to)) up.set(e.to, []);
    if (!down.has(e.from)) down.set(e.from, []);
    up.get(e.to).push(e.from);
    down.get(e.from).push(e.to);
  }
  return { up, down };
}

function reorder(column, neighbours, index) {
  const keyed = column.ids.map((id, i) => {
    const ns = (neighbours.get(id) || []).filter((n) => index.has(n));
    const bary = ns.length ? ns.reduce((sum, n) => sum + index.get(n), 0) / ns.length : i;
    return { id, bary, i };
  });
  keyed.sort((a, b) => a.bary - b.bary || a.i - b.i);
  column.ids = keyed.map((k) => k.id);
}

function indexOf(columns) {
  const index = new Map();
  for (const column of columns) column.ids.forEach((id, i) => index.set(id, i - (column.ids.length - 1) / 2));
  return index;
}

/** Orders each column's ids to reduce crossings (alternating downward and upward sweeps). */
export function orderColumns(nodes, edges) {
  const columns = columnsByRank(nodes);
  const { up, down } = neighbourMaps(edges);
  for (let sweep = 0; sweep < SWEEPS; sweep++) {
    const forward = sweep % 2 === 0;
    const sequence = forward ? columns.slice(1) : columns.slice(0, -1).reverse();
    for (const column of sequence) reorder(column, forward ? up : down, indexOf(columns));
  }
  return columns;
}

const DUMMY_W = 14;
const DUMMY = "\u0001";

function rankNumber(node) {
  return Number.isInteger(node.rank) && node.rank >= 0 ? node.rank : 0;
}

/**
 * Splits each edge that spans several ranks into segments through one placeholder per rank in between, so the
 * ordering gives a long edge its own slot in every row it crosses instead of running under the boxes there.
 */
function withPlaceholders(nodes, edges) {
  const rankOf = new Map(nodes.map((n) => [n.id, rankNumber(n)]));
  const items = nodes.map((n) => ({ id: n.id, rank: rankOf.get(n.id) }));
  const segments = [];
  const chains = edges.map((e, i) => {
    if (!rankOf.has(e.from) || !rankOf.has(e.to)) return [];
    const chain = [];
    let previous = e.from;
    for (let rank = rankOf.get(e.from) + 1; rank < rankOf.get(e.to); rank++) {
      const id = `${DUMMY}${i}:${rank}`;
      items.push({ id, rank });
      segments.push({ from: previous, to: id });
      chain.push(id);
      previous = id;
    }
    segments.push({ from: previous, to: e.to });
    return chain;
  });
  return { items, segments, chains };
}

/** Spacing of the left-to-right layout: ranks are columns, so the gap between ranks is horizontal. */
const LR = { rankGap: 84, nodeGap: 16, marginMain: 24, marginCross: 40, endCross: 24 };

/**
 * Node boxes ({x, y, w, h} by id), the bends of long edges (`routes[i]`: points for edges[i]), OR-group junctions
 * and the drawing's size. `direction` "TB": ranks are rows from the top (sources first), each row centred; "LR":
 * ranks are columns from the left. `nodeW` is every box's width. Positions are computed along the flow (main axis)
 * and across it (cross axis), then mapped to x and y.
 */
export function layoutDag(nodes, edges, nodeW = MIN_NODE_W, direction = "TB") {
  const isLR = direction === "LR";
  const { items, segments, chains } = withPlaceholders(nodes, edges);
  const columns = orderColumns(items, segments);
  const across = isLR ? NODE_H : nodeW;
  const along = isLR ? nodeW : NODE_H;
  const gap = isLR ? LR.nodeGap : NODE_GAP;
  const rankGap = isLR ? LR.rankGap : RANK_GAP;
  const marginMain = isLR ? LR.marginMain : MARGIN_Y;
  const marginCross = isLR ? LR.marginCross : MARGIN_X;
  const point = (c, m) => (isLR ? { x: m, y: c } : { x: c, y: m });
  const sizeOf = (id) => (id.startsWith(DUMMY) ? DUMMY_W : across);
  const rowSize = (ids) => ids.reduce((sum, id) => sum + sizeOf(id), 0) + Math.max(0, ids.length - 1) * gap;
  const widest = Math.max(across, ...columns.map((c) => rowSize(c.ids)));
  const boxes = new Map();
  const bends = new Map();
  columns.forEach((column, r) => {
    let c = marginCross + (widest - rowSize(column.ids)) / 2;
    const m = marginMain + r * (along + rankGap);
    for (const id of column.ids) {
      if (id.startsWith(DUMMY)) bends.set(id, [point(c + DUMMY_W / 2, m), point(c + DUMMY_W / 2, m + along)]);
      else boxes.set(id, { ...point(c, m), w: nodeW, h: NODE_H });
      c += sizeOf(id) + gap;
    }
  });
  const crossTotal = marginCross + (isLR ? LR.endCross : 24) + widest;
  const mainTotal = marginMain * 2 + columns.length * along + Math.max(0, columns.length - 1) * rankGap;
  const routes = chains.map((chain) => chain.flatMap((id) => bends.get(id)));
  const realColumns = columns.map((c) => ({ rank: c.rank, ids: c.ids.filter((id) => !id.startsWith(DUMMY)) }))
    .filter((c) => c.ids.length);
  return {
    boxes, routes, junctions: orJunctions(edges, boxes, direction), columns: realColumns, direction: isLR ? "LR" : "TB",
    width: isLR ? mainTotal : crossTotal, height: isLR ? crossTotal : mainTotal,
  };
}

/** One junction per (dependent, OR group), just before the dependent (above it, or left of it in "LR"): members'
 * edges meet there. */
export function orJunctions(edges, boxes, direction = "TB") {
  const groups = new Map();
  for (const e of edges) {
    if (e.or_group == null || !boxes.has(e.to) || !boxes.has(e.from)) continue;
    const key = `${e.to}\u0000${e.or_group}`;
    if (!groups.has(key)) groups.set(key, { to: e.to, group: e.or_group, members: [] });
    groups.get(key).members.push(e.from);
  }
  const perTarget = new Map();
  for (const g of groups.values()) {
    if (!perTarget.has(g.to)) perTarget.set(g.to, []);
    perTarget.get(g.to).push(g);
  }
  const junctions = [];
  for (const [to, list] of perTarget) {
    const box = boxes.get(to);
    list.sort((a, b) => a.group - b.group);
    list.forEach((g, i) => {
      const offset = (i - (list.length - 1) / 2) * 28;
      junctions.push(direction === "LR"
        ? { ...g, x: box.x - 34, y: box.y + box.h / 2 + offset }
        : { ...g, x: box.x + box.w / 2 + offset, y: box.y - 30 });
    });
  }
  return junctions;
}

/** Every model upstream (ancestors) and downstream (descendants) of `id`, itself included. */
export function lineage(id, edges) {
  const { up, down } = neighbourMaps(edges);
  const walk = (start, next) => {
    const seen = new Set([start]);
    const stack = [start];
    while (stack.length) {
      for (const n of next.get(stack.pop()) || []) {
        if (!seen.has(n)) { seen.add(n); stack.push(n); }
      }
    }
    return seen;
  };
  const ancestors = walk(id, up);
  const descendants = walk(id, down);
  return { ancestors, descendants, all: new Set([...ancestors, ...descendants]) };
}

/** A smooth edge between two points, flowing down ("TB") or right ("LR"). */
export function edgePath(x1, y1, x2, y2, direction = "TB") {
  return routePath([{ x: x1, y: y1 }, { x: x2, y: y2 }], direction);
}

/** A smooth path through points along the flow (straight where two points line up: a long edge crossing a rank). */
export function routePath(points, direction = "TB") {
  const isLR = direction === "LR";
  let d = `M${points[0].x},${points[0].y}`;
  for (let i = 1; i < points.length; i++) {
    const a = points[i - 1];
    const b = points[i];
    if (isLR ? a.y === b.y : a.x === b.x) {
      d += ` L${b.x},${b.y}`;
      continue;
    }
    if (isLR) {
      const dx = Math.max(18, (b.x - a.x) / 2);
      d += ` C${a.x + dx},${a.y} ${b.x - dx},${b.y} ${b.x},${b.y}`;
    } else {
      const dy = Math.max(18, (b.y - a.y) / 2);
      d += ` C${a.x},${a.y + dy} ${b.x},${b.y - dy} ${b.x},${b.y}`;
    }
  }
  return d;
}
