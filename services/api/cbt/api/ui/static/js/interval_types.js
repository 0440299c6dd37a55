// The configured interval types (/api/v1/interval-types), read once per page: how each type's positions are shown.

import { getJSON } from "./api.js";

let types = null;

/** interval type → {is_time, configured, transformations}; {} when the API cannot answer (positions stay numbers). */
export function intervalTypes() {
  types ??= getJSON("/interval-types").then((b) => b.interval_types || {}).catch(() => ({}));
  return types;
}

/** The transformations the config declares for `type`, or [] (the page's own time/number display is enough). */
export async function configuredTransformations(type) {
  const entry = (await intervalTypes())[type];
  return entry?.configured ? entry.transformations : [];
}
