"""The example pipeline's expected tables, written here — not rendered by the product — from the source data alone.

Each derived table of the example pipeline (``models/transformations``) is restated below as SQL over the source
tables, and the range each model must cover is derived from the sources' extent and the models' intervals with the
rules the design states (docs/design/scheduling.md): an external's data ends at its newest position + 1 minus its
``lag``; a quiet model covers its dependencies' data from its start to its end, or short of the end by less than
the smallest task it may still run there (``interval.min`` when partial intervals run, else ``interval.max``); an
OR group contributes the union of its members, an AND list the intersection; a scheduled dependency is always
available. A rendering bug, a wrong range or coverage that
stopped short of the data makes a comparison fail: nothing here asks the product what it should have done.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession

Range = tuple[int, int]


@dataclass(frozen=True)
class Interval:
    max: int
    min: int


@dataclass(frozen=True)
class External:
    """A time-positioned source: the column its bounds are read from and its ``lag`` (seconds)."""

    column: str
    lag_s: int


def q(*parts: str) -> str:
    return ".".join(f"`{p}`" for p in parts)


def between(column: str, span: Range) -> str:
    return f"{column} >= timestamp_seconds({span[0]}) AND {column} < timestamp_seconds({span[1]})"


def minute(src: str, _out: str, span: Range) -> str:
    return f"""
        SELECT slot, slot_start_date_time, block_root, proposer_index,
               count(DISTINCT meta_client_name) AS client_count,
               avg(propagation_slot_start_diff) AS avg_propagation_ms,
               min(propagation_slot_start_diff) AS min_propagation_ms,
               max(propagation_slot_start_diff) AS max_propagation_ms
        FROM {q(src, 'beacon_blocks')} WHERE {between('slot_start_date_time', span)}
        GROUP BY slot, slot_start_date_time, block_root, proposer_index"""


def two_minute(src: str, out: str, span: Range) -> str:
    return f"""
        SELECT slot, slot_start_date_time, block_root, proposer_index, avg_propagation_ms,
               max_propagation_ms - min_propagation_ms AS propagation_spread_ms,
               CASE WHEN avg_propagation_ms < 2000 THEN 'fast' WHEN avg_propagation_ms < 4000 THEN 'normal'
                    ELSE 'slow' END AS propagation_class
        FROM ({minute(src, out, span)}) AS m"""


def five_minute(src: str, out: str, span: Range) -> str:
    latest_entity = f"""
        SELECT validator_index, entity FROM (
          SELECT validator_index, entity,
                 row_number() OVER (PARTITION BY validator_index ORDER BY updated_date_time DESC, entity) AS rn
          FROM {q(src, 'validator_entity')}) AS ranked
        WHERE rn = 1"""
    return f"""
        SELECT p.slot, p.slot_start_date_time, p.block_root, p.proposer_index, coalesce(e.entity, 'unknown') AS entity,
               p.avg_propagation_ms, p.propagation_class, p.propagation_class = 'slow' AS is_late
        FROM ({two_minute(src, out, span)}) AS p
        LEFT JOIN ({latest_entity}) AS e ON e.validator_index = p.proposer_index"""


def transactions(src: str, _out: str, span: Range) -> str:
    columns = "block_number, block_timestamp, tx_hash, tx_index, from_address, to_address, value_wei, gas_used"
    return f"""
        SELECT {columns} FROM (
          SELECT *, row_number() OVER (PARTITION BY tx_hash ORDER BY provider) AS rn FROM (
            SELECT 1 AS provider, {columns} FROM {q(src, 'raw_transactions')}
            WHERE {between('block_timestamp', span)}
            UNION ALL
            SELECT 2 AS provider, {columns} FROM {q(src, 'raw_transactions_alt')}
            WHERE {between('block_timestamp', span)}) AS both_providers) AS ranked
        WHERE rn = 1"""


def block_gas(src: str, out: str, span: Range) -> str:
    return f"""
        SELECT block_number, block_timestamp, count(1) AS tx_count, sum(gas_used) AS total_gas_used,
               CAST(sum(value_wei) AS DECIMAL(38, 0)) AS total_value_wei
        FROM ({transactions(src, out, span)}) AS t
        GROUP BY block_number, block_timestamp"""


@dataclass(frozen=True)
class Expected:
    """One derived table: its SQL over a range, its interval, and what its range is made of."""

    sql: Callable[[str, str, Range], str]
    interval: Interval
    all_of: tuple[str, ...] = ()
    """Dependencies that must all have data (the intersection of their ranges)."""
    any_of: tuple[str, ...] = ()
    """An OR group: the union of its members' ranges."""
    starts_at: int | None = None
    """``limits.min``: the model covers nothing below it."""


@dataclass(frozen=True)
class Pipeline:
    """A pipeline restated: its time-positioned sources, its incremental models (dependencies first) and its
    scheduled models (SQL over the sources, compared whole)."""

    externals: dict[str, External]
    models: dict[str, Expected]
    scheduled: dict[str, Callable[[str], str]]


EXAMPLE_MODELS = {
    "block_propagation_minute": Expected(minute, Interval(60, 12), all_of=("beacon_blocks",)),
    "block_propagation_two_minute": Expected(two_minute, Interval(120, 120), all_of=("block_propagation_minute",)),
    "block_propagation_five_minute": Expected(five_minute, Interval(300, 120),
                                              all_of=("block_propagation_two_minute",)),
    "transactions": Expected(transactions, Interval(60, 0), any_of=("raw_transactions", "raw_transactions_alt")),
    "block_gas": Expected(block_gas, Interval(120, 60), all_of=("transactions",)),
}
"""The example pipeline's incremental models (their scheduled dependency, validator_entities, is always there)."""
EXAMPLE = Pipeline(
    externals={"beacon_blocks": External("slot_start_date_time", 12),  # (models/external: their lag)
               "raw_transactions": External("block_timestamp", 12),
               "raw_transactions_alt": External("block_timestamp", 12)},
    models=EXAMPLE_MODELS, scheduled={})


def covered(data: Range | None, interval: Interval) -> Range | None:
    """The most a model covers of its dependencies' data: whole intervals from the start, then the head's partial
    interval when it is at least ``interval.min`` long (none when the minimum is a whole interval)."""
    if data is None or data[1] <= data[0]:
        return None
    start, end = data
    whole_end = start + (end - start) // interval.max * interval.max
    rest = end - whole_end
    head = rest if rest and interval.min < interval.max and rest >= interval.min else 0
    return (start, whole_end + head) if whole_end + head > start else None


def shortfall_allowed(interval: Interval) -> int:
    """How far short of its dependencies' data a quiet model may stop: less than the smallest task it may still run
    there — ``interval.min`` (at least one position) when partial intervals run, else a whole ``interval.max``. (The
    intervals' grid starts wherever forward fill first started — the head's ``max_valid - interval.max`` — not at
    the data's start, so the end is not a multiple of the interval from the start.)"""
    return max(interval.min, 1) if interval.min < interval.max else interval.max


def coverage_problem(table: str, actual: Range | None, data: Range | None, interval: Interval) -> str | None:
    """Why ``actual`` is not what a quiet model with ``interval`` covers of ``data``, or None: from the data's start
    to its end, or short of the end by less than the smallest task it may still run (``shortfall_allowed``)."""
    if data is None or data[1] <= data[0]:
        return None if actual is None else f"{table}: covers {actual}, its dependencies hold no data"
    short = shortfall_allowed(interval)
    if actual is None or actual[0] != data[0] or actual[1] > data[1] or data[1] - actual[1] >= short:
        return (f"{table}: covers {actual}; its dependencies' data {data} implies from {data[0]} to at least "
                f"{data[1] - short + 1}")
    return None


class IndependentOracle:
    """Expected ranges and rows of ``pipeline``'s tables (the example pipeline's by default), from the source tables
    of ``source_db``."""

    def __init__(self, spark: SparkSession, source_db: str, output_db: str, pipeline: Pipeline = EXAMPLE) -> None:
        self.spark, self.source_db, self.output_db, self.pipeline = spark, source_db, output_db, pipeline

    def external_data(self, table: str) -> Range | None:
        external = self.pipeline.externals[table]
        row = self.spark.sql(f"SELECT unix_seconds(min({external.column})) AS lo, "
                             f"unix_seconds(max({external.column})) AS hi FROM {q(self.source_db, table)}").collect()[0]
        if row["lo"] is None:
            return None
        return int(row["lo"]), int(row["hi"]) + 1 - external.lag_s

    def data_of(self, table: str, ranges: dict[str, Range | None]) -> Range | None:
        """What a model's dependencies hold: the intersection of an AND list, the union of an OR group, from its
        ``limits.min`` on."""
        expected = self.pipeline.models[table]
        if expected.all_of:
            parts = [ranges[d] for d in expected.all_of]
            if any(p is None for p in parts):
                return None
            data = max(p[0] for p in parts if p), min(p[1] for p in parts if p)
        else:
            members = [r for r in (ranges[d] for d in expected.any_of) if r is not None]
            if not members:
                return None
            data = min(r[0] for r in members), max(r[1] for r in members)
        if expected.starts_at is not None:
            data = max(data[0], expected.starts_at), data[1]
        return data if data[1] > data[0] else None

    def coverage_problems(self, actual: dict[str, Range | None]) -> list[str]:
        """Each model's coverage (``actual``, one range each) against what its dependencies' data implies: the
        sources' extent for an external dependency, the dependency's own (checked) coverage for a derived one."""
        ranges: dict[str, Range | None] = {t: self.external_data(t) for t in self.pipeline.externals}
        problems = []
        for table, expected in self.pipeline.models.items():  # (in dependency order)
            problem = coverage_problem(table, actual.get(table), self.data_of(table, ranges), expected.interval)
            if problem is not None:
                problems.append(problem)
            ranges[table] = actual.get(table)
        return problems

    def expected_ranges(self) -> dict[str, Range | None]:
        """The most each model covers when every source's data was there before it ran (one run over a backlog)."""
        ranges: dict[str, Range | None] = {t: self.external_data(t) for t in self.pipeline.externals}
        for table, expected in self.pipeline.models.items():
            ranges[table] = covered(self.data_of(table, ranges), expected.interval)
        return {t: ranges[t] for t in self.pipeline.models}

    def differences(self, table: str, span: Range | None = None) -> tuple[int, int]:
        """Rows only in the pipeline's table, rows only in the expected ones (over ``span`` for an incremental model,
        the whole table for a scheduled one)."""
        ours = f"SELECT * FROM {q(self.output_db, table)}"
        if table in self.pipeline.scheduled:
            expected = self.pipeline.scheduled[table](self.source_db)
        else:
            assert span is not None, f"{table}: an incremental model is compared over a range"
            expected = self.pipeline.models[table].sql(self.source_db, self.output_db, span)
        extra = self.spark.sql(f"SELECT count(*) AS n FROM ({ours} EXCEPT ALL {expected})").collect()[0]["n"]
        missing = self.spark.sql(f"SELECT count(*) AS n FROM ({expected} EXCEPT ALL {ours})").collect()[0]["n"]
        return int(extra), int(missing)

    def verdict(self, coverage: Mapping[str, Sequence[Range]]) -> dict[str, Any]:
        """Whether every table covers what its sources imply (one range each) and equals its expected rows there:
        ``holds``, every problem found, the coverage problems alone, and each table's differences."""
        covering = [f"{t}: covers {len(c)} ranges {c}" for t, c in coverage.items() if len(c) > 1]
        actual = {t: (c[0] if len(c) == 1 else None) for t, c in coverage.items()}
        covering += self.coverage_problems(actual)
        problems = list(covering)
        differences: dict[str, tuple[int, int]] = {}
        for table in self.pipeline.models:
            span = actual.get(table)
            differences[table] = self.differences(table, span) if span else (0, 0)
        for table in self.pipeline.scheduled:
            differences[table] = self.differences(table)
        problems += [f"{t}: {extra} rows only in the pipeline's table, {missing} only expected"
                     for t, (extra, missing) in differences.items() if (extra, missing) != (0, 0)]
        return {"holds": not problems, "problems": "; ".join(problems), "coverage_problems": covering,
                "differences": differences}
