"""Bench (h)'s expected tables, written here — not rendered by the product — from the mixed pipeline's sources alone.

Each transformation of ``bench/mixed_pipeline`` restated as SQL over the source tables (a derived model's SQL reads
its dependency's *expected* rows, never the pipeline's table), with the intervals, dependencies and ``limits.min``
its file declares, for ``tests.e2e.oracle.IndependentOracle`` to judge coverage and rows by.
"""

from __future__ import annotations

from tests.e2e.oracle import Expected, External, Interval, Pipeline, Range, between, q


def slot_minute(src: str, _out: str, span: Range) -> str:
    return f"""
        SELECT b.slot, b.slot_start_date_time, b.proposer_index,
               count(DISTINCT b.meta_client_name) AS client_count,
               avg(b.propagation_slot_start_diff) AS avg_propagation_ms,
               min(b.propagation_slot_start_diff) AS min_propagation_ms,
               max(b.propagation_slot_start_diff) AS max_propagation_ms,
               coalesce(max(t.tx_count), 0) AS tx_count, coalesce(max(t.gas_used), 0) AS gas_used
        FROM {q(src, 'beacon_blocks')} AS b
        LEFT JOIN (SELECT block_number, count(*) AS tx_count, sum(gas_used) AS gas_used
                   FROM {q(src, 'raw_transactions')} WHERE {between('block_timestamp', span)}
                   GROUP BY block_number) AS t ON t.block_number = b.slot
        WHERE {between('b.slot_start_date_time', span)}
        GROUP BY b.slot, b.slot_start_date_time, b.proposer_index"""


def slot_five_minute(src: str, out: str, span: Range) -> str:
    return f"""
        SELECT slot, slot_start_date_time, proposer_index, avg_propagation_ms,
               max_propagation_ms - min_propagation_ms AS propagation_spread_ms,
               CASE WHEN avg_propagation_ms < 2000 THEN 'fast' WHEN avg_propagation_ms < 4000 THEN 'normal'
                    ELSE 'slow' END AS propagation_class,
               tx_count
        FROM ({slot_minute(src, out, span)}) AS m"""


def entities_now(src: str) -> str:
    return f"""
        SELECT validator_index, entity, updated_date_time FROM (
          SELECT validator_index, entity, updated_date_time,
                 row_number() OVER (PARTITION BY validator_index ORDER BY updated_date_time DESC, entity) AS rn
          FROM {q(src, 'validator_entity')}) AS ranked
        WHERE rn = 1"""


def slot_fifteen_minute(src: str, out: str, span: Range) -> str:
    return f"""
        SELECT p.slot, p.slot_start_date_time, coalesce(e.entity, 'unknown') AS entity, p.propagation_class,
               p.propagation_class = 'slow' AS is_late, p.tx_count
        FROM ({slot_five_minute(src, out, span)}) AS p
        LEFT JOIN ({entities_now(src)}) AS e ON e.validator_index = p.proposer_index"""


def tx_dedup(src: str, _out: str, span: Range) -> str:
    return f"""
        SELECT block_number, block_timestamp, tx_hash, tx_index, value_wei, gas_used FROM (
          SELECT *, row_number() OVER (PARTITION BY tx_hash ORDER BY block_timestamp) AS rn
          FROM {q(src, 'raw_transactions')} WHERE {between('block_timestamp', span)}) AS ranked
        WHERE rn = 1"""


def block_gas(src: str, out: str, span: Range) -> str:
    return f"""
        SELECT block_number, block_timestamp, count(*) AS tx_count, sum(gas_used) AS total_gas_used,
               CAST(sum(value_wei) AS DECIMAL(38, 0)) AS total_value_wei
        FROM ({tx_dedup(src, out, span)}) AS t
        GROUP BY block_number, block_timestamp"""


def block_stats(src: str, _out: str, span: Range) -> str:
    return f"""
        SELECT slot, slot_start_date_time, count(*) AS clients,
               max_by(meta_client_name, propagation_slot_start_diff) AS slowest_client,
               max(propagation_slot_start_diff) AS max_propagation_ms
        FROM {q(src, 'beacon_blocks')} WHERE {between('slot_start_date_time', span)}
        GROUP BY slot, slot_start_date_time"""


def head_partial(src: str, _out: str, span: Range) -> str:
    return f"""
        SELECT slot, slot_start_date_time, count(*) AS clients, avg(propagation_slot_start_diff) AS avg_propagation_ms
        FROM {q(src, 'beacon_blocks')} WHERE {between('slot_start_date_time', span)}
        GROUP BY slot, slot_start_date_time"""


def tail_fill(src: str, _out: str, span: Range) -> str:
    return f"""
        SELECT slot, slot_start_date_time, block_root, min(propagation_slot_start_diff) AS first_seen_ms
        FROM {q(src, 'beacon_blocks')} WHERE {between('slot_start_date_time', span)}
        GROUP BY slot, slot_start_date_time, block_root"""


TAIL_FILL_LIMITS_MIN = 1_700_001_000
"""``limits.min`` of ``tail_fill.sql``."""

MIXED = Pipeline(
    externals={"beacon_blocks": External("slot_start_date_time", 12),  # (their lag: mixed_pipeline/external)
               "raw_transactions": External("block_timestamp", 12)},
    models={  # (dependencies first)
        "slot_minute": Expected(slot_minute, Interval(60, 60), all_of=("beacon_blocks", "raw_transactions")),
        "slot_five_minute": Expected(slot_five_minute, Interval(300, 60), all_of=("slot_minute",)),
        "slot_fifteen_minute": Expected(slot_fifteen_minute, Interval(900, 900), all_of=("slot_five_minute",)),
        "tx_dedup": Expected(tx_dedup, Interval(60, 60), all_of=("raw_transactions",)),
        "block_gas": Expected(block_gas, Interval(300, 300), all_of=("tx_dedup",)),
        "block_stats": Expected(block_stats, Interval(120, 120), all_of=("beacon_blocks",)),
        "head_partial": Expected(head_partial, Interval(120, 10), all_of=("beacon_blocks",)),
        "tail_fill": Expected(tail_fill, Interval(300, 300), all_of=("beacon_blocks",),
                              starts_at=TAIL_FILL_LIMITS_MIN),
    },
    scheduled={"entities_now": entities_now},
)
