// The DAG's viewport, pure: which part of the drawing is shown (centre cx, cy in drawing units; k pixels per unit)
// in a frame of cw × ch pixels. Fit, zoom about a point, pan, centre on a box, and the SVG viewBox. No DOM:
// unit-tested with node (tests/unit/ui).

export const MIN_K = 0.15;
export const MAX_K = 2.5;
/** Zoom of a model found by search: close enough to read, without losing its neighbours. */
export const FOCUS_K = 1.4;

const clampK = (k) => Math.min(MAX_K, Math.max(MIN_K, k));

/** The whole drawing in the frame, centred, never magnified beyond 1:1. */
export function fitView(width, height, cw, ch) {
  const k = clampK(Math.min(1, cw / width, ch / height));
  return { cx: width / 2, cy: height / 2, k };
}

/** The SVG viewBox of a view: "x y w h". */
export function viewBox(view, cw, ch) {
  const w = cw / view.k;
  const h = ch / view.k;
  return `${view.cx - w / 2} ${view.cy - h / 2} ${w} ${h}`;
}

/** The visible rectangle in drawing units. */
export function visibleRect(view, cw, ch) {
  const w = cw / view.k;
  const h = ch / view.k;
  return { x: view.cx - w / 2, y: view.cy - h / 2, w, h };
}

/** Zoom by `factor` keeping the drawing point under frame pixel (px, py) where it is. */
export function zoomAt(view, factor, px, py, cw, ch) {
  const k = clampK(view.k * factor);
  const ux = view.cx + (px - cw / 2) / view.k;
  const uy = view.cy + (py - ch / 2) / view.k;
  return { cx: ux - (px - cw / 2) / k, cy: uy - (py - ch / 2) / k, k };
}

/** Move the view by (dx, dy) frame pixels (a drag: the drawing follows the pointer). */
export function panBy(view, dx, dy) {
  return { ...view, cx: view.cx - dx / view.k, cy: view.cy - dy / view.k };
}

/** A box {x, y, w, h} centred in the frame at zoom `k`. */
export function centreOn(box, k) {
  return { cx: box.x + box.w / 2, cy: box.y + box.h / 2, k: clampK(k) };
}
