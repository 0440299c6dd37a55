// DAG page: a layered drawing of /api/v1/dag (rank = row with sources on top, or column with sources on the left; the
// choice is kept in localStorage), status colour per model, OR groups through a dashed junction, hover to light a
// model's ancestors and descendants, click to open the model. Pan and zoom (dag_view.js), a minimap, and a search box
// that centres the drawing on a model and marks it. Live: statuses are re-read when events arrive.

import { getJSON, problemBox } from "../api.js";
import { edgePath, layoutDag, lineage, nodeWidth, routePath } from "../dag_layout.js";
import { centreOn, FOCUS_K, fitView, panBy, viewBox, visibleRect, zoomAt } from "../dag_view.js";
import { byId, emptyState, h, modelHref, s, show, tooltip } from "../dom.js";
import { splitModelId } from "../format.js";
import { batcher, connectEvents } from "../live.js";
import { matchModels } from "../search.js";

const root = byId("dag");
const minimap = byId("dag-minimap");
const DIRECTION_KEY = "cbt.dag.direction";
const MINIMAP_W = 200;
const MINIMAP_H = 260;
/** What the page shows: the drawing (layout, svg), the viewport, the found model; kept across live redraws. */
const state = { dag: null, layout: null, svg: null, view: null, found: null, direction: storedDirection() };

function storedDirection() {
  try {
    return localStorage.getItem(DIRECTION_KEY) === "LR" ? "LR" : "TB";
  } catch {
    return "TB";
  }
}
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

/** Spreads the ends of a node's edges along its side, ordered by where the other end is (fewer crossings). In
 * "TB" edges leave a box at its bottom and enter at its top; in "LR" they leave at its right and enter at its left. */
function ports(links, boxes, isLR) {
  const at = new Map();
  const bySide = new Map();
  for (const link of links) {
    const key = `${link.node}\u0000${link.side}`;
    if (!bySide.has(key)) bySide.set(key, []);
    bySide.get(key).push(link);
  }
  for (const list of bySide.values()) {
    const box = boxes.get(list[0].node);
    list.sort((a, b) => a.other - b.other);
    list.forEach((link, i) => {
      const spread = 0.5 + (list.length > 1 ? (i / (list.length - 1) - 0.5) * 0.6 : 0);
      const isIn = link.side === "in";
      at.set(link.id, isLR ? { x: isIn ? box.x : box.x + box.w, y: box.y + box.h * spread }
        : { x: box.x + box.w * spread, y: isIn ? box.y : box.y + box.h });
    });
  }
  return at;
}

function edgeElements(edges, layout) {
  const { boxes, junctions, routes, direction } = layout;
  const isLR = direction === "LR";
  const cross = (p) => (isLR ? p.y : p.x);
  const junctionOf = new Map(junctions.map((j) => [`${j.to}\u0000${j.group}`, j]));
  const centre = (id) => cross({ x: boxes.get(id).x + boxes.get(id).w / 2, y: boxes.get(id).y + boxes.get(id).h / 2 });
  const drawn = edges.map((e, i) => ({ e, i, id: `e${i}`, bends: routes[i] || [],
    j: e.or_group != null ? junctionOf.get(`${e.to}\u0000${e.or_group}`) : null }))
    .filter(({ e }) => boxes.has(e.from) && boxes.has(e.to));
  const links = drawn.flatMap(({ e, j, id, bends }) => [
    { id: `${id}:out`, node: e.from, side: "out", other: bends.length ? cross(bends[0]) : j ? cross(j) : centre(e.to) },
    ...(j ? [] : [{ id: `${id}:in`, node: e.to, side: "in", other: bends.length ? cross(bends[bends.length - 1]) : centre(e.from) }]),
  ]).concat(junctions.map((j) => ({ id: `j:${j.to}:${j.group}`, node: j.to, side: "in", other: cross(j) })));
  const at = ports(links, boxes, isLR);
  const before = (j) => (isLR ? { x: j.x - 10, y: j.y } : { x: j.x, y: j.y - 10 });
  const out = drawn.map(({ e, j, id, bends }) => {
    const end = j ? before(j) : at.get(`${id}:in`);
    return s("path", {
      class: `edge${j ? " or" : ""}`, d: routePath([at.get(`${id}:out`), ...bends, end], direction), "data-from": e.from,
      "data-to": e.to, "data-or-group": e.or_group ?? "", "marker-end": j ? null : "url(#arrow)",
    });
  });
  for (const j of junctions) {
    const b = at.get(`j:${j.to}:${j.group}`);
    const start = isLR ? { x: j.x + 10, y: j.y } : { x: j.x, y: j.y + 10 };
    out.push(s("path", {
      class: "edge or", d: edgePath(start.x, start.y, b.x, b.y, direction), "data-from": `or:${j.group}`,
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
  return s("defs", {}, arrow("arrow", "var(--edge)"), arrow("arrow-or", "var(--or-edge)"));
}

function rankLabels(layout) {
  return layout.columns.map((column) => {
    const first = layout.boxes.get(column.ids[0]);
    const text = column.rank === 0 ? "sources" : `rank ${column.rank}`;
    if (layout.direction === "LR") {
      return s("text", { class: "rank-label", x: first.x + first.w / 2, y: 22, "text-anchor": "middle" }, text);
    }
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

function frameSize() {
  return { cw: root.clientWidth || 800, ch: root.clientHeight || 480 };
}

/** Shows state.view: the drawing's viewBox and the minimap's view rectangle. */
function applyView() {
  if (!state.svg) return;
  const { cw, ch } = frameSize();
  state.svg.setAttribute("viewBox", viewBox(state.view, cw, ch));
  const rect = minimap.querySelector(".mm-view");
  if (!rect) return;
  const v = visibleRect(state.view, cw, ch);
  for (const [key, value] of Object.entries({ x: v.x, y: v.y, width: v.w, height: v.h })) rect.setAttribute(key, value);
}

function fit() {
  const { cw, ch } = frameSize();
  state.view = fitView(state.layout.width, state.layout.height, cw, ch);
  applyView();
}

function drawMinimap(layout, nodes) {
  const scale = Math.min(MINIMAP_W / layout.width, MINIMAP_H / layout.height);
  const mm = s("svg", { width: Math.round(layout.width * scale), height: Math.max(40, Math.round(layout.height * scale)),
    viewBox: `0 0 ${layout.width} ${layout.height}`, preserveAspectRatio: "xMidYMid meet" },
  [...layout.boxes].map(([id, box]) => s("rect", { class: "mm-node", "data-model": id, x: box.x, y: box.y, width: box.w,
    height: box.h, rx: 6, fill: STATUS_COLOUR[nodes.get(id).status] || "var(--n-waiting)" })),
  s("rect", { class: "mm-view", x: 0, y: 0, width: 0, height: 0 }));
  const moveTo = (event) => {
    const r = mm.getBoundingClientRect();
    state.view = { ...state.view, cx: ((event.clientX - r.left) / r.width) * layout.width,
      cy: ((event.clientY - r.top) / r.height) * layout.height };
    applyView();
  };
  mm.addEventListener("pointerdown", (event) => {
    mm.setPointerCapture(event.pointerId);
    moveTo(event);
  });
  mm.addEventListener("pointermove", (event) => {
    if (mm.hasPointerCapture(event.pointerId)) moveTo(event);
  });
  show(minimap, mm);
  minimap.hidden = false;
}

/** Drag to pan (a drag that started on a model does not open it), wheel to zoom about the pointer. */
function enablePanZoom(svg) {
  let drag = null;
  svg.addEventListener("pointerdown", (event) => {
    if (event.button !== 0) return;
    drag = { x: event.clientX, y: event.clientY, moved: false, id: event.pointerId };
  });
  svg.addEventListener("pointermove", (event) => {
    if (!drag || drag.id !== event.pointerId) return;
    const dx = event.clientX - drag.x;
    const dy = event.clientY - drag.y;
    if (!drag.moved && Math.hypot(dx, dy) < 4) return;
    if (!drag.moved) svg.setPointerCapture(event.pointerId);
    drag.moved = true;
    svg.classList.add("dragging");
    state.view = panBy(state.view, dx, dy);
    drag.x = event.clientX;
    drag.y = event.clientY;
    applyView();
  });
  const end = () => {
    svg.classList.remove("dragging");
    if (drag?.moved) svg.addEventListener("click", (e) => e.preventDefault(), { capture: true, once: true });
    drag = null;
  };
  svg.addEventListener("dragstart", (event) => event.preventDefault()); // a model is a link: no native link drag
  svg.addEventListener("pointerup", end);
  svg.addEventListener("pointercancel", end);
  svg.addEventListener("wheel", (event) => {
    event.preventDefault();
    const r = svg.getBoundingClientRect();
    const { cw, ch } = frameSize();
    state.view = zoomAt(state.view, Math.exp(-event.deltaY * 0.0015), event.clientX - r.left, event.clientY - r.top, cw, ch);
    applyView();
  }, { passive: false });
}

function markFound() {
  if (!state.svg) return;
  state.svg.querySelectorAll(".node.found").forEach((el) => el.classList.remove("found"));
  minimap.querySelectorAll(".mm-node.found").forEach((el) => el.classList.remove("found"));
  if (!state.found) return;
  state.svg.querySelector(`.node[data-model="${CSS.escape(state.found)}"]`)?.classList.add("found");
  minimap.querySelector(`.mm-node[data-model="${CSS.escape(state.found)}"]`)?.classList.add("found");
}

/** Centres the drawing on the best match of `query`, zoomed in, and marks it; says what it found. */
function find(query) {
  const result = byId("dag-search-result");
  if (!state.layout) return;
  const ids = [...state.layout.boxes.keys()];
  const [best, ...more] = matchModels(ids, query, 50);
  state.found = best || null;
  markFound();
  if (!best) {
    result.textContent = query.trim() ? `no model matches “${query.trim()}”` : "";
    return;
  }
  state.view = centreOn(state.layout.boxes.get(best), Math.max(state.view.k, FOCUS_K));
  applyView();
  result.textContent = more.length ? `${best} (and ${more.length} more)` : best;
}

function draw(dag) {
  if (!dag.nodes.length) {
    show(root, emptyState("No models", "The api found no model files under the configured paths (models.*.paths)."));
    return;
  }
  const layout = layoutDag(dag.nodes, dag.edges, nodeWidth(dag.nodes.map((n) => splitModelId(n.id)[1])), state.direction);
  const nodes = new Map(dag.nodes.map((n) => [n.id, n]));
  const svg = s("svg", { width: "100%", height: "100%", role: "img", "aria-label": "Model DAG",
    "data-direction": layout.direction },
  markers(), rankLabels(layout), s("g", { class: "edges" }, edgeElements(dag.edges, layout)),
  s("g", { class: "nodes" }, [...layout.boxes].map(([id, box]) => nodeElement(nodes.get(id), box))));
  svg.addEventListener("pointerover", (event) => {
    const node = event.target.closest(".node");
    if (!node) return;
    highlight(svg, node.dataset.model, dag.edges);
    const n = nodes.get(node.dataset.model);
    tooltip.show(event, n.id, `${n.type}, ${STATUS_TEXT[n.status] || n.status}`, "click to open");
  });
  svg.addEventListener("pointerout", (event) => {
    if (event.relatedTarget?.closest?.(".node") === event.target.closest(".node")) return;
    highlight(svg, null, dag.edges);
    tooltip.hide();
  });
  enablePanZoom(svg);
  const isNewShape = !state.layout || state.layout.width !== layout.width || state.layout.height !== layout.height;
  Object.assign(state, { dag, layout, svg });
  show(root, svg);
  drawMinimap(layout, nodes);
  byId("dag-models").replaceChildren(...[...layout.boxes.keys()].sort().map((id) => h("option", { value: id })));
  if (isNewShape || !state.view) fit();
  else applyView();
  markFound();
  root.dataset.loaded = "true";
}

function setDirection(direction) {
  state.direction = direction;
  try {
    localStorage.setItem(DIRECTION_KEY, direction);
  } catch { /* storage unavailable: the choice lasts for this page */ }
  for (const button of document.querySelectorAll("[data-direction]")) {
    button.setAttribute("aria-checked", String(button.dataset.direction === direction));
  }
  if (state.dag) {
    state.layout = null;
    draw(state.dag);
    if (state.found) find(state.found);
  }
}

function bindControls() {
  for (const button of document.querySelectorAll("[data-direction]")) {
    button.addEventListener("click", () => setDirection(button.dataset.direction));
  }
  setDirection(state.direction);
  const zoomBy = (factor) => {
    if (!state.view) return;
    const { cw, ch } = frameSize();
    state.view = zoomAt(state.view, factor, cw / 2, ch / 2, cw, ch);
    applyView();
  };
  document.querySelector('[data-action="zoom-in"]').addEventListener("click", () => zoomBy(1.25));
  document.querySelector('[data-action="zoom-out"]').addEventListener("click", () => zoomBy(0.8));
  document.querySelector('[data-action="fit"]').addEventListener("click", () => state.layout && fit());
  byId("dag-search").addEventListener("submit", (event) => {
    event.preventDefault();
    find(byId("dag-search-input").value);
  });
  byId("dag-search-input").addEventListener("input", (event) => {
    if (!event.target.value.trim()) {
      state.found = null;
      markFound();
      byId("dag-search-result").textContent = "";
    }
  });
  window.addEventListener("resize", () => applyView());
  const wanted = new URLSearchParams(location.search).get("find");
  if (wanted) byId("dag-search-input").value = wanted;
}

async function load() {
  try {
    draw(await getJSON("/dag"));
    const input = byId("dag-search-input");
    if (input.value.trim() && !state.found) find(input.value);
  } catch (error) {
    show(root, problemBox(error));
  }
}

bindControls();
const reload = batcher(load, 2000);
connectEvents(() => reload("dag"), () => reload("dag"));
load();
