// The header of every page: the model search (a combobox: type to filter model ids, arrows to move, Enter or a click
// to open the model, Escape to close; "/" focuses it) and the theme control. Loaded by base.html on every page.

import { getJSON } from "./api.js";
import { byId, h, modelHref } from "./dom.js";
import { matchModels } from "./search.js";
import { initTheme } from "./theme.js";

const LIMIT = 12;

function modelSearch(input, list) {
  let ids = null;
  let shown = [];
  let active = -1;

  const close = () => {
    list.hidden = true;
    input.setAttribute("aria-expanded", "false");
    input.removeAttribute("aria-activedescendant");
    active = -1;
  };
  const setActive = (index) => {
    active = index;
    list.querySelectorAll("[role=option]").forEach((el, i) => el.setAttribute("aria-selected", String(i === index)));
    if (index >= 0) input.setAttribute("aria-activedescendant", `model-search-${index}`);
    else input.removeAttribute("aria-activedescendant");
  };
  const render = () => {
    const query = input.value;
    shown = ids && query.trim() ? matchModels(ids, query, LIMIT) : [];
    if (!query.trim()) {
      close();
      return;
    }
    list.replaceChildren(...(shown.length ? shown.map((id, i) => h("li", { role: "option", id: `model-search-${i}`,
      "aria-selected": "false", "data-model": id },
    h("a", { href: modelHref(id), tabindex: "-1" }, id)))
      : [h("li", { class: "none" }, ids ? "no model matches" : "loading models…")]));
    list.hidden = false;
    input.setAttribute("aria-expanded", "true");
    setActive(shown.length ? 0 : -1);
  };
  const load = async () => {
    if (ids) return;
    try {
      ids = (await getJSON("/models")).models.map((m) => m.id).sort();
    } catch {
      ids = [];
    }
    render();
  };

  input.addEventListener("focus", load);
  input.addEventListener("input", () => {
    load();
    render();
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      if (!shown.length) return;
      event.preventDefault();
      const step = event.key === "ArrowDown" ? 1 : -1;
      setActive((active + step + shown.length) % shown.length);
    } else if (event.key === "Enter") {
      event.preventDefault();
      if (active >= 0 && shown[active]) location.assign(modelHref(shown[active]));
    } else if (event.key === "Escape") {
      close();
    }
  });
  input.addEventListener("blur", () => setTimeout(close, 150));
  list.addEventListener("mousedown", (event) => event.preventDefault()); // keep focus: the click below navigates
  document.addEventListener("keydown", (event) => {
    const typing = event.target instanceof HTMLElement && event.target.closest("input, textarea, select, [contenteditable]");
    if (event.key === "/" && !typing) {
      event.preventDefault();
      input.focus();
    }
  });
}

const input = document.getElementById("model-search");
if (input) modelSearch(input, byId("model-search-list"));
initTheme(document.getElementById("theme-choice"));
