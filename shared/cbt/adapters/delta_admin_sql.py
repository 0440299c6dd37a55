"""Spark SQL for the Delta admin tables: DDL, live coverage, range removal and consolidation.

Table names arrive back-quoted (``quote_identifier``); values are always bound as named parameters (``:name``),
never spliced into the text. Ranges are half-open ``[position, position + interval)``.

The live-part rule (``cbt.scheduling.protocol``) lives here once, in ``_live``: what an invalidation recorded for a
model under an epoch above a row's ``invalidation_seq`` overlaps is not covered by that row; the rest of the row is.
Coverage and consolidation both start from the live parts, so they cannot disagree.
"""

from __future__ import annotations

from collections.abc import Collection

from cbt.models.spec import ModelId
from cbt.state.admin_records import CONSOLIDATED, split_model_id

Params = dict[str, object]

INCREMENTAL_COLUMNS = (
    ("updated_date_time", "TIMESTAMP"),
    ("database", "STRING"),
    ("table", "STRING"),
    ("position", "BIGINT"),
    ("interval", "BIGINT"),
    ("task_id", "STRING"),
    ("direction", "STRING"),
    ("invalidation_seq", "BIGINT"),
    ("worker", "STRING"),
    ("duration_ms", "BIGINT"),
    ("task_interval", "BIGINT"),
)
"""Name and Spark SQL type of each ``cbt_incremental`` column, in table order."""
TASK_INTERVAL_COLUMN = ("task_interval BIGINT COMMENT 'length of each task the row records: the row covers tasks "
                        "[position + k * task_interval, ...); null: one task (or consolidated before it was kept)'")
"""The column added to tables created before task boundaries were kept (``ALTER TABLE ... ADD COLUMNS``)."""
SCHEDULED_COLUMNS = (
    ("updated_date_time", "TIMESTAMP"),
    ("database", "STRING"),
    ("table", "STRING"),
    ("scheduled_unix", "BIGINT"),
    ("task_id", "STRING"),
    ("status", "STRING"),
    ("error", "STRING"),
    ("duration_ms", "BIGINT"),
)

INVALIDATION_COLUMNS = (
    ("received_date_time", "TIMESTAMP"),
    ("id", "STRING"),
    ("database", "STRING"),
    ("table", "STRING"),
    ("start", "BIGINT"),
    ("end", "BIGINT"),
    ("reason", "STRING"),
    ("source", "STRING"),
    ("cascade", "BOOLEAN"),
    ("metadata", "STRING"),
    ("affected", "STRING"),
    ("seq", "STRING"),
)
_FAILED_TASK_COLUMNS = (
    ("failed_date_time", "TIMESTAMP"),
    ("database", "STRING"),
    ("table", "STRING"),
    ("position", "BIGINT"),
    ("interval", "BIGINT"),
    ("scheduled_unix", "BIGINT"),
    ("task_id", "STRING"),
)
"""When and which task failed: the leading columns of ``cbt_failures`` and ``cbt_retries``."""

FAILURE_COLUMNS = (
    *_FAILED_TASK_COLUMNS,
    ("attempts", "BIGINT"),
    ("error", "STRING"),
    ("worker", "STRING"),
)

RETRY_COLUMNS = (
    *_FAILED_TASK_COLUMNS,
    ("attempt", "BIGINT"),
    ("error", "STRING"),
    ("direction", "STRING"),
    ("worker", "STRING"),
    ("duration_ms", "BIGINT"),
)


def create_database(database: str) -> str:
    return f"CREATE DATABASE IF NOT EXISTS {database}"


def create_incremental(table: str) -> str:
    # Partitioned by model so a rewrite of one model's rows conflicts only with appends to that same model.
    return f"""CREATE TABLE IF NOT EXISTS {table} (
  updated_date_time TIMESTAMP COMMENT 'when the row was written',
  `database` STRING, `table` STRING,
  position BIGINT COMMENT 'first covered position', `interval` BIGINT COMMENT 'covers [position, position + interval)',
  task_id STRING, direction STRING COMMENT 'forward | backfill | rerun | consolidated',
  invalidation_seq BIGINT COMMENT 'model invalidation sequence read before the task ran',
  worker STRING, duration_ms BIGINT,
  {TASK_INTERVAL_COLUMN}
) USING DELTA PARTITIONED BY (`database`, `table`)
COMMENT 'cbt: completed intervals; live coverage excludes rows superseded by cbt_invalidations'"""


def create_scheduled(table: str) -> str:
    return f"""CREATE TABLE IF NOT EXISTS {table} (
  updated_date_time TIMESTAMP, `database` STRING, `table` STRING,
  scheduled_unix BIGINT COMMENT 'the cron time this run was for', task_id STRING,
  status STRING COMMENT 'success | failed', error STRING, duration_ms BIGINT
) USING DELTA
COMMENT 'cbt: every run of every scheduled model'"""


def create_invalidations(table: str) -> str:
    return f"""CREATE TABLE IF NOT EXISTS {table} (
  received_date_time TIMESTAMP, id STRING, `database` STRING, `table` STRING,
  `start` BIGINT, `end` BIGINT COMMENT 'invalidated [start, end)', reason STRING, source STRING, cascade BOOLEAN,
  metadata STRING COMMENT 'JSON object', affected STRING COMMENT 'JSON: model -> [[start, end], ...] removed',
  seq STRING COMMENT 'JSON: model -> invalidation sequence after this event'
) USING DELTA
COMMENT 'cbt: every accepted invalidation and what it affected'"""


def create_failures(table: str) -> str:
    return f"""CREATE TABLE IF NOT EXISTS {table} (
  failed_date_time TIMESTAMP COMMENT 'when the last attempt failed', `database` STRING, `table` STRING,
  position BIGINT, `interval` BIGINT COMMENT 'the task [position, position + interval); null for a scheduled run',
  scheduled_unix BIGINT COMMENT 'the cron time of a scheduled run', task_id STRING,
  attempts BIGINT COMMENT 'attempts made (0: the task could not be run at all)', error STRING, worker STRING
) USING DELTA
COMMENT 'cbt: every task that failed its last attempt (it is tried again on a later backfill tick)'"""


def create_retries(table: str) -> str:
    return f"""CREATE TABLE IF NOT EXISTS {table} (
  failed_date_time TIMESTAMP COMMENT 'when the attempt failed', `database` STRING, `table` STRING,
  position BIGINT, `interval` BIGINT COMMENT 'the task [position, position + interval); null for a scheduled run',
  scheduled_unix BIGINT COMMENT 'the cron time of a scheduled run', task_id STRING,
  attempt BIGINT COMMENT 'which attempt failed (1 is the first)', error STRING,
  direction STRING COMMENT 'forward, backfill, rerun or scheduled', worker STRING,
  duration_ms BIGINT COMMENT 'how long the failed attempt ran'
) USING DELTA
COMMENT 'cbt: every attempt of a task that failed and was tried again (the last failed attempt is in cbt_failures)'"""


def model_filter(models: Collection[ModelId] | None, prefix: str = "m") -> tuple[str, Params]:
    """A predicate on ``database``/``table`` selecting ``models`` (all when ``None``), with its parameters."""
    if models is None:
        return "TRUE", {}
    if not models:
        return "FALSE", {}
    terms: list[str] = []
    params: Params = {}
    for i, model in enumerate(sorted(models)):
        params[f"{prefix}d{i}"], params[f"{prefix}t{i}"] = split_model_id(model)
        terms.append(f"(`database` = :{prefix}d{i} AND `table` = :{prefix}t{i})")
    return "(" + " OR ".join(terms) + ")", params


def _inv_ranges(invalidations: str) -> str:
    """CTEs ``inv_seqs`` (model, epoch, ranges per recorded event) and ``inv_ranges`` (one row per range)."""
    return f"""inv_seqs AS (
  SELECT s.key AS model, s.value AS seq,
         from_json(i.affected, 'map<string,array<array<bigint>>>')[s.key] AS ranges
  FROM {invalidations} i LATERAL VIEW explode(from_json(i.seq, 'map<string,bigint>')) s AS key, value
),
inv_ranges AS (
  SELECT model, seq, r[0] AS range_start, r[1] AS range_end FROM inv_seqs LATERAL VIEW explode(ranges) x AS r
)"""


def _live(incremental: str, invalidations: str, where: str) -> str:
    """CTEs ending in ``live``: every row's live pieces (``cbt.scheduling.protocol.live_pieces``) as rows with the
    columns ``database, table, position, interval, invalidation_seq, duration_ms, step``.

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
         coalesce(task_interval, CASE WHEN direction = '{CONSOLIDATED}' THEN 0 ELSE `interval` END) AS step
  FROM {incremental} WHERE {where} AND position IS NOT NULL AND `interval` > 0
),
hits AS (
  SELECT r.`database`, r.`table`, r.position, r.`interval`, r.invalidation_seq, r.step,
         greatest(v.range_start, r.position) AS cut_start, least(v.range_end, r.position + r.`interval`) AS cut_end
  FROM model_rows r JOIN inv_ranges v
    ON v.model = concat(r.`database`, '.', r.`table`) AND v.seq > r.invalidation_seq
   AND v.range_start < r.position + r.`interval` AND v.range_end > r.position
),
cuts AS (
  SELECT DISTINCT `database`, `table`, position, `interval`, invalidation_seq, step, cut
  FROM hits LATERAL VIEW explode(array(position, position + `interval`, cut_start, cut_end)) c AS cut
),
pieces AS (
  SELECT `database`, `table`, position, `interval`, invalidation_seq, step, cut AS piece_start,
         lead(cut) OVER (PARTITION BY `database`, `table`, position, `interval`, invalidation_seq, step
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
              ELSE piece_end - piece_start END AS step
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
# starts where that one ends and has the same (known) step.
_RUNS = """units AS (
  SELECT `database`, `table`, position, `interval`, step, min(invalidation_seq) AS invalidation_seq,
         sum(duration_ms) AS duration_ms
  FROM live GROUP BY `database`, `table`, position, `interval`, step
),
chained AS (
  SELECT *, CASE WHEN step <> 0 AND lag(step) OVER w = step AND lag(position + `interval`) OVER w = position
                 THEN 0 ELSE 1 END AS is_first
  FROM units WINDOW w AS (PARTITION BY `database`, `table` ORDER BY position, `interval`, step)
),
run_numbers AS (
  SELECT *, sum(is_first) OVER (PARTITION BY `database`, `table` ORDER BY position, `interval`, step
    ROWS UNBOUNDED PRECEDING) AS run
  FROM chained
),
runs AS (
  SELECT `database`, `table`, min(position) AS range_start, max(position + `interval`) AS range_end,
         max(step) AS step, min(invalidation_seq) AS min_seq, sum(duration_ms) AS duration_ms
  FROM run_numbers GROUP BY `database`, `table`, run
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


def consolidate_statement(incremental: str, invalidations: str) -> str:
    """Rewrite one model's rows (``:db``, ``:tbl``, ``:model``) as runs of its live tasks in one Delta commit.

    The rows are read inside the same transaction that replaces them, so a row appended concurrently either is
    read and merged or makes the commit fail with a conflict; it is never dropped. A merged row carries the highest
    epoch recorded for the model: every recorded invalidation is already cut out of it, and one recorded later gets
    a higher epoch, so it still cuts the merged row (only where it overlaps). It keeps its tasks' length in
    ``task_interval``, so an invalidation still re-runs exactly the tasks that ran.
    """
    where = "`database` = :db AND `table` = :tbl"
    return f"""INSERT INTO {incremental} REPLACE WHERE {where}
WITH {_live(incremental, invalidations, where)},
{_RUNS},
seq_floor AS (SELECT coalesce(max(seq), 0) AS seq FROM inv_seqs WHERE model = :model)
SELECT current_timestamp() AS updated_date_time, i.`database`, i.`table`,
  i.range_start AS position, i.range_end - i.range_start AS `interval`,
  concat(:model, ':', i.range_start, ':', i.range_end - i.range_start) AS task_id,
  '{CONSOLIDATED}' AS direction, greatest(i.min_seq, f.seq) AS invalidation_seq,
  '{CONSOLIDATED}' AS worker, i.duration_ms, nullif(i.step, 0) AS task_interval
FROM runs i CROSS JOIN seq_floor f"""


def live_pieces_query(incremental: str, invalidations: str, where: str) -> str:
    """The live pieces (``cbt.scheduling.protocol.Piece``) of the rows ``where`` selects that overlap ``[:lo, :hi)``:
    columns ``database, table, position, interval, step``."""
    rows = f"({where}) AND position < :hi AND position + `interval` > :lo"
    return f"""WITH {_live(incremental, invalidations, rows)}
SELECT DISTINCT `database`, `table`, position, `interval`, step FROM live
WHERE position < :hi AND position + `interval` > :lo"""


def invalidated_ranges_query(invalidations: str, models: Collection[ModelId]) -> tuple[str, Params]:
    """Every range ever recorded as invalidated for ``models`` (the tasks events re-run): columns ``model,
    range_start, range_end``."""
    params: Params = {f"s{i}": m for i, m in enumerate(sorted(models))}
    where = "model IN (" + ", ".join(f":{k}" for k in params) + ")" if params else "FALSE"
    return f"""WITH {_inv_ranges(invalidations)}
SELECT DISTINCT model, range_start, range_end FROM inv_ranges WHERE {where}""", params


def insert_invalidation_statement(invalidations: str) -> str:
    """Record one invalidation under a new epoch unless one with the same ``id`` is already recorded (events are
    redelivered). The epoch is one more than the highest recorded, computed inside the commit: two concurrent
    records both read the table, so Delta lets one commit and the other retries and reads the first's epoch."""
    models = "from_json(:models, 'array<string>')"
    return f"""MERGE INTO {invalidations} AS t
USING (
  SELECT timestamp_millis(:received_ms) AS received_date_time, :id AS id, :db AS `database`,
    :tbl AS `table`, :start AS `start`, :end AS `end`, :reason AS reason, :source AS source,
    :cascade AS cascade, :metadata AS metadata, :affected AS affected,
    to_json(map_from_arrays({models}, array_repeat(e.epoch, size({models})))) AS seq
  FROM (
    SELECT coalesce(max(s.value), 0) + 1 AS epoch
    FROM {invalidations} i LATERAL VIEW explode(from_json(i.seq, 'map<string,bigint>')) s AS key, value
  ) e
) AS s
ON t.id = s.id
WHEN NOT MATCHED THEN INSERT *"""


def invalidation_query(invalidations: str) -> str:
    """The recorded invalidation with id ``:id`` (the columns of ``invalidations_query``)."""
    return f"""SELECT unix_millis(received_date_time) AS received_ms, id, `database`, `table`, `start`, `end`,
  reason, source, cascade, metadata, affected, seq
FROM {invalidations} WHERE id = :id"""


def invalidations_query(invalidations: str) -> str:
    return f"""SELECT unix_millis(received_date_time) AS received_ms, id, `database`, `table`, `start`, `end`,
  reason, source, cascade, metadata, affected, seq
FROM {invalidations} ORDER BY received_date_time DESC, id LIMIT :limit"""


def scheduled_runs_query(scheduled: str, where: str, latest_only: bool) -> str:
    """Runs newest first (by scheduled time, then write time); with ``latest_only`` one per model."""
    order = "scheduled_unix DESC, updated_date_time DESC"
    keep = "WHERE rn = 1" if latest_only else "WHERE rn <= :limit"
    return f"""SELECT * FROM (
  SELECT unix_millis(updated_date_time) AS updated_ms, `database`, `table`, scheduled_unix, task_id, status,
    error, duration_ms, row_number() OVER (PARTITION BY `database`, `table` ORDER BY {order}) AS rn
  FROM {scheduled} WHERE {where}
) {keep} ORDER BY `database`, `table`, rn"""


def retries_query(retries: str, where: str) -> str:
    """Retried attempts newest first."""
    return f"""SELECT unix_millis(failed_date_time) AS failed_ms, `database`, `table`, position, `interval`,
  scheduled_unix, task_id, attempt, error, direction, worker, duration_ms
FROM {retries} WHERE {where} ORDER BY failed_date_time DESC, task_id, attempt DESC LIMIT :limit"""


def failures_query(failures: str, where: str) -> str:
    """Failures newest first."""
    return f"""SELECT unix_millis(failed_date_time) AS failed_ms, `database`, `table`, position, `interval`,
  scheduled_unix, task_id, attempts, error, worker
FROM {failures} WHERE {where} ORDER BY failed_date_time DESC, task_id LIMIT :limit"""
