// Tiny helpers to build DOM and SVG nodes without HTML strings (text is never parsed as markup).

const SVG_NS = "http://www.w3.org/2000/svg";

function applyAttrs(el, attrs) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value == null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else if (key === "text") el.textContent = String(value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child == null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** An HTML element: h("a", {href: "/x", class: "c"}, "text", otherNode). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  applyAttrs(el, attrs);
  append(el, children);
  return el;
}

/** An SVG element, same signature as h(). */
export function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  applyAttrs(el, attrs);
  append(el, children);
  return el;
}

/** Replace an element's children. */
export function show(el, ...children) {
  el.replaceChildren();
  append(el, children);
  el.removeAttribute("aria-busy");
  return el;
}

export function byId(id) {
  const el = document.getElementById(id);
  if (!el) throw new Error(`missing #${id}`);
  return el;
}

/** A "nothing here" message with a headline and a useful next step. */
export function emptyState(title, text) {
  return h("div", { class: "empty" }, h("strong", {}, title), text);
}

/** A table from column specs: {label, cell: row => node|string, class?}. */
export function table(columns, rows, attrs = {}) {
  return h("table", { class: "data", ...attrs },
    h("thead", {}, h("tr", {}, columns.map((c) => h("th", { class: c.class }, c.label)))),
    h("tbody", {}, rows.map((row) => h("tr", {}, columns.map((c) => h("td", { class: c.class }, c.cell(row)))))));
}

export function modelHref(id) {
  return `/models/${encodeURIComponent(id)}`;
}

export function modelLink(id, attrs = {}) {
  const dot = String(id).indexOf(".");
  if (dot < 0) return h("a", { href: modelHref(id), ...attrs }, id);
  return h("a", { href: modelHref(id), title: id, ...attrs },
    h("span", { class: "db" }, id.slice(0, dot + 1)), id.slice(dot + 1));
}

/** The shared tooltip: show(html-free lines) near the pointer, hide(). */
export const tooltip = {
  show(event, ...lines) {
    const el = document.getElementById("tooltip");
    if (!el) return;
    el.replaceChildren();
    lines.forEach((line, i) => {
      if (i) el.append(document.createElement("br"));
      el.append(line instanceof Node ? line : document.createTextNode(String(line)));
    });
    el.hidden = false;
    const { innerWidth, innerHeight } = window;
    const rect = el.getBoundingClientRect();
    const x = Math.min(event.clientX + 14, innerWidth - rect.width - 8);
    const y = event.clientY + 18 + rect.height > innerHeight ? event.clientY - rect.height - 12 : event.clientY + 18;
    el.style.left = `${Math.max(8, x)}px`;
    el.style.top = `${Math.max(8, y)}px`;
  },
  hide() {
    const el = document.getElementById("tooltip");
    if (el) el.hidden = true;
  },
};
