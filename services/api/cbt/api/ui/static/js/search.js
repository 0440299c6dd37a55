// Finding models by id, pure: a case-insensitive substring match, best matches first. Used by the header's model
// search and the DAG's search box. No DOM: unit-tested with node (tests/unit/ui).

/** How well `id` matches `query` (lower is better), or null when it does not contain it. */
export function matchRank(id, query) {
  const text = String(id).toLowerCase();
  const q = String(query).trim().toLowerCase();
  if (!q) return null;
  const at = text.indexOf(q);
  if (at < 0) return null;
  if (text === q) return 0;
  const table = text.slice(text.indexOf(".") + 1);
  if (table === q) return 1;
  if (table.startsWith(q)) return 2;
  if (at === 0) return 3;
  return 4;
}

/**
 * The ids containing `query` (case-insensitive), best first: the exact id, then an exact table name, a table
 * name or id starting with it, then any other; ties by id. At most `limit`.
 */
export function matchModels(ids, query, limit = 12) {
  return ids.map((id) => ({ id, rank: matchRank(id, query) }))
    .filter((m) => m.rank !== null)
    .sort((a, b) => a.rank - b.rank || a.id.localeCompare(b.id))
    .slice(0, limit)
    .map((m) => m.id);
}
