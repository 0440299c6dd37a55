"""Source data for the example pipeline: deterministic rows for any range of slot times, rewritable (reorgs).

Positions are unix seconds; a slot starts every 12 s. For each slot: one beacon block seen by three monitoring
clients (``beacon_blocks``), three transactions from the primary provider (``raw_transactions``) and, on every
other slot, the same transactions again from the second provider (``raw_transactions_alt``). ``version`` changes
block roots, timings and transaction hashes: writing a range again with a new version is an upstream rewrite.
Every write replaces the range's rows in one Delta commit per table, so writing the same range twice is harmless.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import SparkSession

from cbt.adapters.spark import quote_identifier as q

SLOT_S = 12
VALIDATORS = 64
ENTITIES = ("lido", "coinbase", "kraken", "rocketpool", "solo")


@dataclass(frozen=True)
class SourceTables:
    database: str

    def table(self, name: str) -> str:
        return f"{q(self.database)}.{q(name)}"


def first_slot_time(position: int) -> int:
    return -(-position // SLOT_S) * SLOT_S


def write_blocks(spark: SparkSession, src: SourceTables, start: int, end: int, version: int = 0,
                 broken_clock_at: int | None = None) -> None:
    """Beacon blocks for slot times in ``[start, end)``; replaces whatever the range held. ``broken_clock_at``: a
    slot time in the range whose block is also reported by a broken clock (``BROKEN_CLOCK_ROW``), in the same
    commit."""
    broken = "" if broken_clock_at is None else f"UNION ALL {broken_clock_row(broken_clock_at)}"
    spark.sql(f"""
        INSERT INTO {src.table('beacon_blocks')}
        REPLACE WHERE slot_start_date_time >= timestamp_seconds({start})
          AND slot_start_date_time < timestamp_seconds({end})
        SELECT t DIV {SLOT_S} AS slot, timestamp_seconds(t) AS slot_start_date_time,
               sha2(concat('block-', t, '-v', {version}), 256) AS block_root,
               pmod(t DIV {SLOT_S} * 7 + {version}, {VALIDATORS}) AS proposer_index,
               concat('client-', c) AS meta_client_name,
               CAST(pmod(hash(t, c, {version}), 6000) AS BIGINT) AS propagation_slot_start_diff
        FROM range({first_slot_time(start)}, {end}, {SLOT_S}) AS r(t)
        CROSS JOIN (SELECT explode(array(1, 2, 3)) AS c)
        {broken}
    """)


def broken_clock_row(slot_time: int) -> str:
    """A SELECT of one beacon block row for the slot at ``slot_time``, reported 5 s before its slot started (what the
    example pipeline's check ``seen_after_slot_start`` refuses)."""
    return (f"SELECT {slot_time // SLOT_S} AS slot, timestamp_seconds({slot_time}) AS slot_start_date_time, "
            "'broken-clock' AS block_root, 7 AS proposer_index, 'client-9' AS meta_client_name, "
            "CAST(-5000 AS BIGINT) AS propagation_slot_start_diff")


def write_broken_clock_block(spark: SparkSession, src: SourceTables, slot_time: int) -> None:
    """The broken clock's row for the slot at ``slot_time``, added to what is there; ``write_blocks`` over the slot
    repairs it."""
    spark.sql(f"INSERT INTO {src.table('beacon_blocks')} {broken_clock_row(slot_time)}")


def write_transactions(spark: SparkSession, src: SourceTables, start: int, end: int, version: int = 0) -> None:
    """Transactions for slot times in ``[start, end)`` from both providers (the second on even slots only)."""
    for table, where in (("raw_transactions", "true"), ("raw_transactions_alt", f"(t DIV {SLOT_S}) % 2 = 0")):
        spark.sql(f"""
            INSERT INTO {src.table(table)}
            REPLACE WHERE block_timestamp >= timestamp_seconds({start}) AND block_timestamp < timestamp_seconds({end})
            SELECT t DIV {SLOT_S} AS block_number, timestamp_seconds(t) AS block_timestamp,
                   sha2(concat('tx-', t, '-', i, '-v', {version}), 256) AS tx_hash, CAST(i AS INT) AS tx_index,
                   concat('0xfrom', pmod(t + i, 17)) AS from_address, concat('0xto', pmod(t * i, 13)) AS to_address,
                   CAST(pmod(hash(t, i, {version}), 1000000) AS DECIMAL(38, 0)) * 1000000000 AS value_wei,
                   CAST(21000 + pmod(hash(i, t, {version}), 100000) AS BIGINT) AS gas_used
            FROM range({first_slot_time(start)}, {end}, {SLOT_S}) AS r(t)
            CROSS JOIN (SELECT explode(array(0, 1, 2)) AS i)
            WHERE {where}
        """)


def write_validator_entities(spark: SparkSession, src: SourceTables, at: int) -> None:
    """One entity per validator (replacing the table's contents)."""
    names = ", ".join(f"'{e}'" for e in ENTITIES)
    spark.sql(f"""
        INSERT OVERWRITE {src.table('validator_entity')}
        SELECT id AS validator_index, element_at(array({names}), CAST(pmod(id, {len(ENTITIES)}) + 1 AS INT)) AS entity,
               timestamp_seconds({at}) AS updated_date_time
        FROM range(0, {VALIDATORS})
    """)


def write_range(spark: SparkSession, src: SourceTables, start: int, end: int, version: int = 0) -> None:
    """Every time-positioned source table over ``[start, end)``."""
    write_blocks(spark, src, start, end, version)
    write_transactions(spark, src, start, end, version)
