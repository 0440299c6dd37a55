"""The coverage protocol's SQL on the admin tables: live parts, coverage, consolidation and epochs.

Table names arrive back-quoted (``quote_identifier``); values are always bound as named parameters (``:name``),
never spliced into the text. Ranges are half-open ``[position, position + interval)``.

The live-part rule (``cbt.scheduling.protocol``) lives here once, in ``_live``: what an invalidation recorded for a
model under an epoch above a row's ``invalidation_seq`` overlaps is not covered by that row; the rest of the row is.
Coverage and consolidation both start from the live parts, so they cannot disagree. The statements that write whole
rows take the table's column names (its spec, ``columns``) and fail when one has no value here.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from cbt.adapters.admin_tables.columns import Params, select_as
from cbt.models.spec import ModelId
from cbt.state.admin_records import CONSOLIDATED


def _inv_ranges(invalidations: str) -> str:
    """CTEs ``inv_seqs`` (model, epoch, runs per recorded event) and ``inv_ranges`` (one row per run of tasks
    ``[range_start, range_end)`` of length ``step``; a record written before runs lists ``[start, end]``, one task).
    A run marks the same positions as its tasks, so the live-part rule reads only its ends."""
    return f"""inv_seqs AS (
  SELECT s.key AS model, s.value AS seq,
         from_json(i.affected, 'map<string,array<array<bigint>>>')[s.key] AS ranges
  FROM {invalidations} i LATERAL VIEW explode(from_json(i.seq, 'map<string,bigint>')) s AS key, value
),
inv_ranges AS (
  SELECT model, seq, r[0] AS range_start, r[1] AS range_end, coalesce(try_element_at(r, 3), r[1] - r[0]) AS step
  FROM inv_seqs LATERAL VIEW explode(ranges) x AS r
)"""


def _live(incremental: str, invalidations: str, where: str) -> str:
    """CTEs ending in ``live``: every row's live pieces (``cbt.scheduling.protocol.live_pieces``) as rows with the
    columns ``database, table, position, interval, invalidation_seq, duration_ms, step, model_version``.

    A row no newer invalidation overlaps is live whole. A row that some do overlap is cut at its own ends and at
    theirs (clipped to it), and each piece between two consecutive cuts that none of them covers is kept; a piece
    keeps the row's step when it starts and ends on the row's task boundaries, else it is one task of its own.
    A row's step is its ``task_interval``; without one, the whole row (one task), or unknown (``0``) for a row
    consolidated before task boundaries were kept.
    """
    return f"""{_inv_ranges(invalidations)},
model_rows AS (
  SELECT `database`, `table`, position, `interval`, coalesce(invalidation_seq, 0) AS invalidation_seq,
         coalesce(duration_ms, 0) AS duration_ms,
         coalesce(task_interval, CASE WHEN direction = '{CONSOLIDATED}' THEN 0 ELSE `interval` END) AS step,
         model_version
  FROM {incremental} WHERE {where} AND position IS NOT NULL AND `interval` > 0
),
hits AS (
  SELECT r.`database`, r.`table`, r.position, r.`interval`, r.invalidation_seq, r.step, r.model_version,
         greatest(v.range_start, r.position) AS cut_start, least(v.range_end, r.position + r.`interval`) AS cut_end
  FROM model_rows r JOIN inv_ranges v
    ON v.model = concat(r.`database`, '.', r.`table`) AND v.seq > r.invalidation_seq
   AND v.range_start < r.position + r.`interval` AND v.range_end > r.position
),
cuts AS (
  SELECT DISTINCT `database`, `table`, position, `interval`, invalidation_seq, step, model_version, cut
  FROM hits LATERAL VIEW explode(array(position, position + `interval`, cut_start, cut_end)) c AS cut
),
pieces AS (
  SELECT `database`, `table`, position, `interval`, invalidation_seq, step, model_version, cut AS piece_start,
         lead(cut) OVER (PARTITION BY `database`, `table`, position, `interval`, invalidation_seq, step, model_version
                         ORDER BY cut) AS piece_end
  FROM cuts
),
kept AS (
  SELECT p.* FROM pieces p LEFT ANTI JOIN hits h
    ON h.`database` = p.`database` AND h.`table` = p.`table` AND h.position = p.position
   AND h.`interval` = p.`interval` AND h.invalidation_seq = p.invalidation_seq AND h.step = p.step
   AND h.cut_start <= p.piece_start AND h.cut_end >= p.piece_end
  WHERE p.piece_end IS NOT NULL
),
live AS (
  SELECT r.* FROM model_rows r LEFT ANTI JOIN hits h
    ON h.`database` = r.`database` AND h.`table` = r.`table` AND h.position = r.position
   AND h.`interval` = r.`interval` AND h.invalidation_seq = r.invalidation_seq AND h.step = r.step
  UNION ALL
  SELECT `database`, `table`, piece_start AS position, piece_end - piece_start AS `interval`, invalidation_seq,
         0 AS duration_ms,
         CASE WHEN step = 0 THEN 0
              WHEN (piece_start - position) % step = 0 AND (piece_end - piece_start) % step = 0 THEN step
              ELSE piece_end - piece_start END AS step,
         model_version
  FROM kept
)"""


# Gaps and islands: a live row starts a new island unless it overlaps or touches the furthest end seen so far.
_ISLANDS = """marked AS (
  SELECT *, position + `interval` AS row_end,
    CASE WHEN position <= max(position + `interval`) OVER (PARTITION BY `database`, `table`
      ORDER BY position, `interval` ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) THEN 0 ELSE 1 END AS is_first
  FROM live
),
numbered AS (
  SELECT *, sum(is_first) OVER (PARTITION BY `database`, `table` ORDER BY position, `interval`
    ROWS UNBOUNDED PRECEDING) AS island
  FROM marked
),
islands AS (
  SELECT `database`, `table`, min(position) AS range_start, max(row_end) AS range_end,
         min(invalidation_seq) AS min_seq, sum(duration_ms) AS duration_ms
  FROM numbered GROUP BY `database`, `table`, island
)"""


# Runs (``cbt.scheduling.protocol.runs``): equal pieces count once; a piece joins the run of the one before it when it
# starts where that one ends and has the same (known) step — among the pieces of one model version (a run never
# mixes the versions that computed its rows).
_RUNS = """units AS (
  SELECT `database`, `table`, model_version, position, `interval`, step, min(invalidation_seq) AS invalidation_seq,
         sum(duration_ms) AS duration_ms
  FROM live GROUP BY `database`, `table`, model_version, position, `interval`, step
),
chained AS (
  SELECT *, CASE WHEN step <> 0 AND lag(step) OVER w = step AND lag(position + `interval`) OVER w = position
                 THEN 0 ELSE 1 END AS is_first
  FROM units WINDOW w AS (PARTITION BY `database`, `table`, model_version ORDER BY position, `interval`, step)
),
run_numbers AS (
  SELECT *, sum(is_first) OVER (PARTITION BY `database`, `table`, model_version ORDER BY position, `interval`, step
    ROWS UNBOUNDED PRECEDING) AS run
  FROM chained
),
runs AS (
  SELECT `database`, `table`, model_version, min(position) AS range_start, max(position + `interval`) AS range_end,
         max(step) AS step, min(invalidation_seq) AS min_seq, sum(duration_ms) AS duration_ms
  FROM run_numbers GROUP BY `database`, `table`, model_version, run
)"""


def coverage_query(incremental: str, invalidations: str, where: str) -> str:
    """Merged live ranges: columns ``database, table, range_start, range_end``."""
    return f"""WITH {_live(incremental, invalidations, where)},
{_ISLANDS}
SELECT `database`, `table`, range_start, range_end FROM islands"""


def seqs_query(invalidations: str, models: Collection[ModelId] | None) -> tuple[str, Params]:
    """Highest recorded invalidation sequence per model: columns ``model, seq``."""
    params: Params = {}
    where = "TRUE"
    if models is not None:
        params = {f"s{i}": m for i, m in enumerate(sorted(models))}
        where = "s.key IN (" + ", ".join(f":{k}" for k in params) + ")" if params else "FALSE"
    query = f"""SELECT s.key AS model, max(s.value) AS seq
FROM {invalidations} i LATERAL VIEW explode(from_json(i.seq, 'map<string,bigint>')) s AS key, value
WHERE {where} GROUP BY s.key"""
    return query, params


def row_counts_query(incremental: str, invalidations: str, where: str) -> str:
    """Per model: ``row_count`` stored and ``run_count``, the rows it would have after consolidation."""
    return f"""WITH {_live(incremental, invalidations, where)},
{_RUNS},
stored AS (SELECT `database`, `table`, count(*) AS row_count FROM {incremental} WHERE {where} GROUP BY 1, 2),
merged AS (SELECT `database`, `table`, count(*) AS run_count FROM runs GROUP BY 1, 2)
SELECT s.`database`, s.`table`, s.row_count, coalesce(m.run_count, 0) AS run_count
FROM stored s LEFT JOIN merged m ON s.`database` = m.`database` AND s.`table` = m.`table`"""


def version_runs_query(incremental: str, invalidations: str, where: str) -> str:
    """The live runs of each model version (``cbt.scheduling.protocol.version_runs``): columns ``database, table,
    model_version, range_start, range_end``."""
    return f"""WITH {_live(incremental, invalidations, where)},
{_RUNS}
SELECT `database`, `table`, model_version, range_start, range_end FROM runs"""


ONE_MODEL = "`database` = :db AND `table` = :tbl"
"""The rows of one model (``:db``, ``:tbl``)."""
ANOTHER_MODEL = "`database` = :src_db AND `table` = :src_tbl"
"""The rows of another model (``:src_db``, ``:src_tbl``): a build's, adopted at its switch."""


def _run_row(seq: str) -> dict[str, str]:
    """A run of ``runs`` as a row of the model ``:db``, ``:tbl`` (``:model``) under the epoch ``seq``."""
    return {
        "updated_date_time": "current_timestamp()", "database": ":db", "table": ":tbl",
        "position": "i.range_start", "interval": "i.range_end - i.range_start",
        "task_id": "concat(:model, ':', i.range_start, ':', i.range_end - i.range_start)",
        "direction": f"'{CONSOLIDATED}'", "invalidation_seq": seq,
        "worker": f"'{CONSOLIDATED}'", "duration_ms": "i.duration_ms", "task_interval": "nullif(i.step, 0)",
        "model_version": "i.model_version",
    }  # fmt: skip


_SEQ_FLOOR = "seq_floor AS (SELECT coalesce(max(seq), 0) AS seq FROM inv_seqs WHERE model = :model)"


def consolidate_statement(incremental: str, invalidations: str, columns: Sequence[str]) -> str:
    """Rewrite one model's rows (``:db``, ``:tbl``, ``:model``) as runs of its live tasks in one Delta commit; the
    rows written have ``columns``, in that order.

    The rows are read inside the same transaction that replaces them, so a row appended concurrently either is
    read and merged or makes the commit fail with a conflict; it is never dropped. A merged row carries the highest
    epoch recorded for the model: every recorded invalidation is already cut out of it, and one recorded later gets
    a higher epoch, so it still cuts the merged row (only where it overlaps). It keeps its tasks' length in
    ``task_interval``, so an invalidation still re-runs exactly the tasks that ran, and its tasks' ``model_version``:
    rows computed by different versions are never merged.
    """
    return f"""INSERT INTO {incremental} REPLACE WHERE {ONE_MODEL}
WITH {_live(incremental, invalidations, ONE_MODEL)},
{_RUNS},
{_SEQ_FLOOR}
SELECT {select_as(columns, _run_row("greatest(i.min_seq, f.seq)"))}
FROM runs i CROSS JOIN seq_floor f"""


def adopt_statement(incremental: str, invalidations: str, columns: Sequence[str]) -> str:
    """Replace one model's rows (``:db``, ``:tbl``, ``:model``) with the runs of another model's live tasks
    (``:src_db``, ``:src_tbl``: its build) in one Delta commit, under the model's highest epoch (the build's epochs
    count another sequence); the model's own rows that overlap ``[:keep_start, :keep_end)`` — the head its build did
    not cover, re-run next — are kept, cut to their tasks that overlap it (``cbt.scheduling.protocol.tasks_over``),
    so that re-run finds the tasks that computed it and the rest of those rows does not outlive the switch."""
    step = f"coalesce(task_interval, CASE WHEN direction = '{CONSOLIDATED}' THEN 0 ELSE `interval` END)"
    low = "(CASE WHEN k.step = 0 THEN k.position ELSE k.position + greatest(0, floor((:keep_start - k.position) / " \
          "k.step)) * k.step END)"
    high = "(CASE WHEN k.step = 0 THEN k.position + k.`interval` ELSE least(k.position + k.`interval`, k.position + " \
           "ceil((:keep_end - k.position) / k.step) * k.step) END)"
    kept = {c: f"k.`{c}`" for c in columns} | {"position": f"CAST({low} AS BIGINT)",
                                               "interval": f"CAST({high} - {low} AS BIGINT)"}
    return f"""INSERT INTO {incremental} REPLACE WHERE {ONE_MODEL}
WITH {_live(incremental, invalidations, ANOTHER_MODEL)},
{_RUNS},
{_SEQ_FLOOR},
head_rows AS (SELECT *, {step} AS step FROM {incremental}
  WHERE {ONE_MODEL} AND position < :keep_end AND position + `interval` > :keep_start)
SELECT {select_as(columns, _run_row("f.seq"))}
FROM runs i CROSS JOIN seq_floor f
UNION ALL
SELECT {select_as(columns, kept)} FROM head_rows k"""


def live_pieces_query(incremental: str, invalidations: str, where: str) -> str:
    """The live pieces (``cbt.scheduling.protocol.Piece``) of the rows ``where`` selects that overlap ``[:lo, :hi)``:
    columns ``database, table, position, interval, step``."""
    rows = f"({where}) AND position < :hi AND position + `interval` > :lo"
    return f"""WITH {_live(incremental, invalidations, rows)}
SELECT DISTINCT `database`, `table`, position, `interval`, step FROM live
WHERE position < :hi AND position + `interval` > :lo"""


def invalidated_ranges_query(invalidations: str, models: Collection[ModelId]) -> tuple[str, Params]:
    """Every run of tasks ever recorded as invalidated for ``models`` (the tasks events re-run): columns ``model,
    range_start, range_end, step``."""
    params: Params = {f"s{i}": m for i, m in enumerate(sorted(models))}
    where = "model IN (" + ", ".join(f":{k}" for k in params) + ")" if params else "FALSE"
    return f"""WITH {_inv_ranges(invalidations)}
SELECT DISTINCT model, range_start, range_end, step FROM inv_ranges WHERE {where}""", params


def insert_invalidation_statement(invalidations: str, columns: Sequence[str]) -> str:
    """Record one invalidation under a new epoch unless one with the same ``id`` is already recorded (events are
    redelivered); the row has ``columns``. The epoch is one more than the highest recorded, computed inside the
    commit: two concurrent records both read the table, so Delta lets one commit and the other retries and reads the
    first's epoch. Parameters: ``:received_ms``, ``:db``, ``:tbl``, ``:models`` (JSON array of the affected
    models) and one per other column, named as it."""
    models = "from_json(:models, 'array<string>')"
    special = {"received_date_time": "timestamp_millis(:received_ms)", "database": ":db", "table": ":tbl",
               "seq": f"to_json(map_from_arrays({models}, array_repeat(e.epoch, size({models}))))"}
    row = {name: special.get(name, f":{name}") for name in columns}
    return f"""MERGE INTO {invalidations} AS t
USING (
  SELECT {select_as(columns, row)}
  FROM (
    SELECT coalesce(max(s.value), 0) + 1 AS epoch
    FROM {invalidations} i LATERAL VIEW explode(from_json(i.seq, 'map<string,bigint>')) s AS key, value
  ) e
) AS s
ON t.id = s.id
WHEN NOT MATCHED THEN INSERT *"""


def prunable_invalidations_query(incremental: str, invalidations: str, columns: str) -> str:
    """The records (``columns``) received before ``:before_ms`` that ``cbt.scheduling.protocol.is_prunable`` lets
    go, for every model they name: not the model's newest epoch, no completion row computed before them overlapping
    their runs, and every run inside the model's live coverage. A record that names no model is prunable by age."""
    return f"""WITH {_live(incremental, invalidations, "TRUE")},
{_ISLANDS},
top AS (SELECT model, max(seq) AS top_seq FROM inv_seqs GROUP BY model),
old_runs AS (
  SELECT o.id, s.key AS model, s.value AS epoch, r[0] AS range_start, r[1] AS range_end
  FROM {invalidations} o LATERAL VIEW explode(from_json(o.seq, 'map<string,bigint>')) s AS key, value
  LATERAL VIEW OUTER explode(from_json(o.affected, 'map<string,array<array<bigint>>>')[s.key]) x AS r
  WHERE o.received_date_time < timestamp_millis(:before_ms)
),
newest AS (
  SELECT o.id FROM old_runs o JOIN top t ON t.model = o.model WHERE o.epoch >= t.top_seq
),
masking AS (
  SELECT o.id FROM old_runs o JOIN {incremental} c
    ON concat(c.`database`, '.', c.`table`) = o.model AND coalesce(c.invalidation_seq, 0) < o.epoch
   AND c.position < o.range_end AND c.position + c.`interval` > o.range_start
),
not_rerun AS (
  SELECT o.id FROM old_runs o LEFT ANTI JOIN islands i
    ON concat(i.`database`, '.', i.`table`) = o.model
   AND i.range_start <= o.range_start AND i.range_end >= o.range_end
  WHERE o.range_start IS NOT NULL
),
blocked AS (SELECT id FROM newest UNION SELECT id FROM masking UNION SELECT id FROM not_rerun)
SELECT {columns} FROM {invalidations} v LEFT ANTI JOIN blocked b ON b.id = v.id
WHERE v.received_date_time < timestamp_millis(:before_ms)"""
