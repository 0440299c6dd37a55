// DAG page: a layered drawing of /api/v1/dag (rank = row, sources on top), status colour per model, OR groups through a
// dashed junction, hover to light a model's ancestors and descendants, click to open the model. Live: statuses are
// re-read when events arrive.

import { getJSON, problemBox } from "../api.js";
import { edgePath, layoutDag, lineage, nodeWidth, routePath } from "../dag_layout.js";
import { byId, emptyState, modelHref, s, show, tooltip } from "../dom.js";
import { splitModelId } from "../format.js";
import { batcher, connectEvents } from "../live.js";

const root = byId("dag");
const STATUS_TEXT = {
  ok: "up to date", lagging: "lagging", failing: "failing", waiting: "waiting for data",
  external: "external source", scheduled: "scheduled",
};
const STATUS_COLOUR = {
  ok: "var(--n-ok)", lagging: "var(--n-lagging)", failing: "var(--n-failing)", waiting: "var(--n-waiting)",
  external: "var(--n-external)", scheduled: "var(--n-scheduled)",
};

function subtitle(database, node, status) {
  const kind = node.type === "incremental" ? STATUS_TEXT[status] || status : node.type;
  return `${database.length > 18 ? `${database.slice(0, 17)}…` : database} · ${kind}`;
}

function nodeElement(node, box) {
  const [database, table] = splitModelId(node.id);
  const status = node.status || "waiting";
  return s("a", {
    class: "node", href: modelHref(node.id), "data-model": node.id, "data-status": status, "data-type": node.type,
    transform: `translate(${box.x},${box.y})`,
  },
  s("rect", { class: "box", width: box.w, height: box.h, rx: 7 }),
  s("rect", { class: "strip", width: 6, height: box.h, rx: 3, fill: STATUS_COLOUR[status] || "var(--n-waiting)" }),
  s("text", { class: "title", x: 16, y: 22 }, table.length > 34 ? `${table.slice(0, 33)}…` : table),
  s("text", { class: "subtitle", x: 16, y: 40 }, subtitle(database, node, status)));
}

/** Spreads the ends of a node's edges along its side, ordered by where the other end is (fewer crossings). */
function ports(links, boxes) {
  const at = new Map();
  const bySide = new Map();
  for (const link of links) {
    const key = `${link.node}\u0000${link.side}`;
    if (!bySide.has(key)) bySide.set(key, []);
    bySide.get(key).push(link);
  }
  for (const list of bySide.values()) {
    const box = boxes.get(list[0].node);
    list.sort((a, b) => a.otherX - b.otherX);
    list.forEach((link, i) => {
      const x = box.x + box.w * (0.5 + (list.length > 1 ? (i / (list.length - 1) - 0.5) * 0.6 : 0));
      at.set(link.id, { x, y: link.side === "top" ? box.y : box.y + box.h });
    });
  }
  return at;
}

function edgeElements(edges, layout) {
  const { boxes, junctions, routes } = layout;
  const junctionOf = new Map(junctions.map((j) => [`${j.to}\u0000${j.group}`, j]));
  const centre = (id) => boxes.get(id).x + boxes.get(id).w / 2;
  const drawn = edges.map((e, i) => ({ e, i, id: `e${i}`, bends: routes[i] || [],
    j: e.or_group != null ? junctionOf.get(`${e.to}\u0000${e.or_group}`) : null }))
    .filter(({ e }) => boxes.has(e.from) && boxes.has(e.to));
  const links = drawn.flatMap(({ e, j, id, bends }) => [
    { id: `${id}:out`, node: e.from, side: "bottom", otherX: bends.length ? bends[0].x : j ? j.x : centre(e.to) },
    ...(j ? [] : [{ id: `${id}:in`, node: e.to, side: "top", otherX: bends.length ? bends[bends.length - 1].x : centre(e.from) }]),
  ]).concat(junctions.map((j) => ({ id: `j:${j.to}:${j.group}`, node: j.to, side: "top", otherX: j.x })));
  const at = ports(links, boxes);
  const out = drawn.map(({ e, j, id, bends }) => {
    const end = j ? { x: j.x, y: j.y - 10 } : at.get(`${id}:in`);
    return s("path", {
      class: `edge${j ? " or" : ""}`, d: routePath([at.get(`${id}:out`), ...bends, end]), "data-from": e.from,
      "data-to": e.to, "data-or-group": e.or_group ?? "", "marker-end": j ? null : "url(#arrow)",
    });
  });
  for (const j of junctions) {
    const b = at.get(`j:${j.to}:${j.group}`);
    out.push(s("path", {
      class: "edge or", d: edgePath(j.x, j.y + 10, b.x, b.y), "data-from": `or:${j.group}`,
      "data-to": j.to, "data-or-group": j.group, "marker-end": "url(#arrow-or)",
    }));
    out.push(s("g", { class: "junction", "data-to": j.to, "data-or-group": j.group, "data-members": j.members.join(" ") },
      s("title", {}, `OR group ${j.group} of ${j.to}: one of ${j.members.join(", ")} is enough`),
      s("circle", { cx: j.x, cy: j.y, r: 10 }),
      s("text", { x: j.x, y: j.y + 3, "text-anchor": "middle" }, "OR")));
  }
  return out;
}

function markers() {
  const arrow = (id, colour) => s("marker", {
    id, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 6, markerHeight: 6, orient: "auto-start-reverse",
  }, s("path", { d: "M0,0 L10,5 L0,10 z", fill: colour, style: "fill: context-stroke" }));
  return s("defs", {}, arrow("arrow", "#94a3b8"), arrow("arrow-or", "#a855f7"));
}

function rankLabels(layout) {
  return layout.columns.map((column) => {
    const first = layout.boxes.get(column.ids[0]);
    const text = column.rank === 0 ? "sources" : `rank ${column.rank}`;
    return s("text", { class: "rank-label", x: 20, y: first.y + first.h / 2 + 4 }, text);
  });
}

function highlight(svg, id, edges) {
  if (!id) {
    root.classList.remove("highlighting");
    svg.querySelectorAll(".lit").forEach((el) => el.classList.remove("lit"));
    return;
  }
  const { all } = lineage(id, edges);
  root.classList.add("highlighting");
  svg.querySelectorAll(".node").forEach((el) => el.classList.toggle("lit", all.has(el.dataset.model)));
  svg.querySelectorAll(".edge").forEach((el) => {
    const to = el.dataset.to;
    const from = el.dataset.from.startsWith("or:")
      ? [...svg.querySelectorAll(`.junction[data-to="${CSS.escape(to)}"][data-or-group="${el.dataset.orGroup}"]`)]
        .some((j) => j.dataset.members.split(" ").some((m) => all.has(m)))
      : all.has(el.dataset.from);
    el.classList.toggle("lit", Boolean(from) && all.has(to));
  });
  svg.querySelectorAll(".junction").forEach((el) => {
    el.classList.toggle("lit", all.has(el.dataset.to) && el.dataset.members.split(" ").some((m) => all.has(m)));
  });
}

function draw(dag) {
  if (!dag.nodes.length) {
    show(root, emptyState("No models", "The api found no model files under the configured paths (models.*.paths)."));
    return;
  }
  const layout = layoutDag(dag.nodes, dag.edges, nodeWidth(dag.nodes.map((n) => splitModelId(n.id)[1])));
  const byId = new Map(dag.nodes.map((n) => [n.id, n]));
  const svg = s("svg", { width: layout.width, height: layout.height, viewBox: `0 0 ${layout.width} ${layout.height}`, role: "img", "aria-label": "Model DAG" },
    markers(), rankLabels(layout), s("g", { class: "edges" }, edgeElements(dag.edges, layout)),
    s("g", { class: "nodes" }, [...layout.boxes].map(([id, box]) => nodeElement(byId.get(id), box))));
  svg.addEventListener("pointerover", (event) => {
    const node = event.target.closest(".node");
    if (!node) return;
    highlight(svg, node.dataset.model, dag.edges);
    const n = byId.get(node.dataset.model);
    tooltip.show(event, n.id, `${n.type}, ${STATUS_TEXT[n.status] || n.status}`, "click to open");
  });
  svg.addEventListener("pointerout", (event) => {
    if (event.relatedTarget?.closest?.(".node") === event.target.closest(".node")) return;
    highlight(svg, null, dag.edges);
    tooltip.hide();
  });
  show(root, svg);
  root.dataset.loaded = "true";
}

async function load() {
  try {
    draw(await getJSON("/dag"));
  } catch (error) {
    show(root, problemBox(error));
  }
}

const reload = batcher(load, 2000);
connectEvents(() => reload("dag"), () => reload("dag"));
load();
