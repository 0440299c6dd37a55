// The DAG's layered layout: columns by rank, fewer crossings, OR-group junctions, lineage.
import assert from "node:assert/strict";
import { test } from "node:test";

import { layoutDag, lineage, nodeWidth, orderColumns, orJunctions } from "../../../../services/api/cbt/api/ui/static/js/dag_layout.js";

const node = (id, rank) => ({ id, rank, type: "incremental", status: "ok" });

test("each rank is a row, sources at the top, rows centred", () => {
  const nodes = [node("s.a", 0), node("s.b", 0), node("t.b", 1), node("t.c", 2)];
  const edges = [{ from: "s.a", to: "t.b", or_group: null }, { from: "t.b", to: "t.c", or_group: null }];
  const { boxes, width, height } = layoutDag(nodes, edges, 200);
  assert.ok(boxes.get("s.a").y < boxes.get("t.b").y && boxes.get("t.b").y < boxes.get("t.c").y);
  assert.equal(boxes.get("s.a").y, boxes.get("s.b").y);
  const centre = (id) => boxes.get(id).x + boxes.get(id).w / 2;
  assert.equal(centre("t.b"), (centre("s.a") + centre("s.b")) / 2);
  assert.ok(width >= boxes.get("s.b").x + 200 && height >= boxes.get("t.c").y + boxes.get("t.c").h);
});

test("boxes are as wide as the longest title needs, within bounds", () => {
  assert.equal(nodeWidth(["a"]), 180);
  assert.ok(nodeWidth(["block_propagation_five_minute"]) >= 29 * 7);
  assert.equal(nodeWidth(["x".repeat(200)]), 270);
});

test("ordering by barycentre removes a crossing", () => {
  // s.a feeds t.z, s.b feeds t.y: sorted by name the edges cross; ordered, they do not.
  const nodes = [node("s.a", 0), node("s.b", 0), node("t.y", 1), node("t.z", 1)];
  const edges = [{ from: "s.a", to: "t.z", or_group: null }, { from: "s.b", to: "t.y", or_group: null }];
  const columns = orderColumns(nodes, edges);
  assert.deepEqual(columns[1].ids, ["t.z", "t.y"]);
});

test("an OR group meets at one junction just above its dependent", () => {
  const nodes = [node("s.a", 0), node("s.b", 0), node("t.x", 1)];
  const edges = [{ from: "s.a", to: "t.x", or_group: 0 }, { from: "s.b", to: "t.x", or_group: 0 }];
  const { boxes } = layoutDag(nodes, edges);
  const junctions = orJunctions(edges, boxes);
  assert.equal(junctions.length, 1);
  assert.deepEqual(junctions[0].members.sort(), ["s.a", "s.b"]);
  assert.ok(junctions[0].y < boxes.get("t.x").y && junctions[0].y > boxes.get("s.a").y + boxes.get("s.a").h);
});

test("lineage is every ancestor and descendant, not siblings", () => {
  const edges = [
    { from: "a", to: "b" }, { from: "b", to: "c" }, { from: "x", to: "c" }, { from: "b", to: "d" }, { from: "y", to: "z" },
  ];
  const { ancestors, descendants, all } = lineage("b", edges);
  assert.deepEqual([...ancestors].sort(), ["a", "b"]);
  assert.deepEqual([...descendants].sort(), ["b", "c", "d"]);
  assert.ok(!all.has("x") && !all.has("y"));
});

test("an edge across ranks bends through its own slot in every row it crosses, clear of the boxes there", () => {
  const nodes = [node("s.a", 0), node("t.m", 1), node("t.n", 1), node("t.z", 2)];
  const edges = [
    { from: "s.a", to: "t.m", or_group: null }, { from: "s.a", to: "t.n", or_group: null },
    { from: "t.m", to: "t.z", or_group: null }, { from: "s.a", to: "t.q", or_group: null },
    { from: "s.a", to: "t.z", or_group: null },
  ];
  nodes.push(node("t.q", 3));
  const { boxes, routes } = layoutDag(nodes, edges, 200);
  assert.deepEqual(routes[0], []);
  assert.equal(routes[3].length, 4); // ranks 1 and 2: in and out of each row
  const [bend] = routes[4];
  assert.equal(bend.y, boxes.get("t.m").y);
  for (const id of ["t.m", "t.n"]) {
    const box = boxes.get(id);
    assert.ok(bend.x < box.x || bend.x > box.x + box.w, `${id} is under the long edge`);
  }
});
