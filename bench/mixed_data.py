"""Source data of bench (h), the mixed pipeline, and when each part of it lands.

Positions are unix seconds, a slot every 12 s (three monitoring clients per block, three transactions per slot).
Before the services start, a 35-minute backlog exists in every source, except that ``raw_transactions`` stalled
``STALLED_S`` before its end. Then, timed from the services' start:

- the head grows: every ``STEP_S`` seconds ``STEP_S`` more seconds of blocks land, but each slot's third client row
  arrives one step late (inside the external's ``lag`` of 12 s, so the pipeline never sees a half-written slot);
- ``raw_transactions`` stays stalled, then catches up to the head in one late batch and follows it: the chain,
  which reads it, gets more than fifteen minutes of new rows at once, so every level of it completes an interval
  made ready after the start (its freshness: ``bench.mixed_freshness``);
- older history (``HISTORY_S`` before the backlog) lands last, transactions first: a model reading both externals
  takes the lower of their minimums (docs/design/scheduling.md#dependency-bounds), so blocks without their transactions
  would be computed too early.

Every write is one Delta commit (``INSERT``), so a bounds scan never sees a step half-written.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from pyspark.sql import SparkSession

from cbt.dev.generator import SLOT_S, VALIDATORS, SourceTables, first_slot_time

T0 = 1_700_000_400
"""The backlog's first position (a multiple of 60 and of the 12 s slot)."""
BACKLOG_S = 35 * 60
STEP_S = 10
GROWTH_STEPS = 9
STALL_UNTIL_STEP = 6
"""``raw_transactions`` writes nothing in steps 1-5 and catches up to the head in step 6."""
STALLED_S = 900
"""How long before the backlog's end ``raw_transactions`` stalled."""
TRANSACTIONS_BACKLOG_END = T0 + BACKLOG_S - STALLED_S
HISTORY_AT_S = 110
HISTORY_S = 600
HEAD_END = T0 + BACKLOG_S + GROWTH_STEPS * STEP_S
HISTORY_START = T0 - HISTORY_S
ENTITIES = ("lido", "coinbase", "kraken", "rocketpool", "solo")


@dataclass(frozen=True)
class Sources:
    spark: SparkSession
    tables: SourceTables

    def blocks(self, start: int, end: int, clients: tuple[int, ...] = (1, 2, 3),
               late: tuple[int, int] | None = None) -> None:
        """Block rows of ``clients`` for slots in ``[start, end)``, and client 3's rows of the slots in ``late``
        (the previous step's), in one commit."""
        parts = [self._blocks_select(start, end, clients)]
        if late is not None and late[0] < late[1]:
            parts.append(self._blocks_select(late[0], late[1], (3,)))
        self.spark.sql(f"INSERT INTO {self.tables.table('beacon_blocks')}\n" + "\nUNION ALL\n".join(parts))

    def transactions(self, start: int, end: int) -> None:
        self.spark.sql(f"""
            INSERT INTO {self.tables.table('raw_transactions')}
            SELECT t DIV {SLOT_S} AS block_number, timestamp_seconds(t) AS block_timestamp,
                   sha2(concat('tx-', t, '-', i), 256) AS tx_hash, CAST(i AS INT) AS tx_index,
                   concat('0xfrom', pmod(t + i, 17)) AS from_address, concat('0xto', pmod(t * i, 13)) AS to_address,
                   CAST(pmod(hash(t, i), 1000000) AS DECIMAL(38, 0)) * 1000000000 AS value_wei,
                   CAST(21000 + pmod(hash(i, t), 100000) AS BIGINT) AS gas_used
            FROM range({first_slot_time(start)}, {end}, {SLOT_S}) AS r(t)
            CROSS JOIN (SELECT explode(array(0, 1, 2)) AS i)
        """)

    def entities(self, at: int) -> None:
        names = ", ".join(f"'{e}'" for e in ENTITIES)
        self.spark.sql(f"""
            INSERT OVERWRITE {self.tables.table('validator_entity')}
            SELECT id AS validator_index,
                   element_at(array({names}), CAST(pmod(id, {len(ENTITIES)}) + 1 AS INT)) AS entity,
                   timestamp_seconds({at}) AS updated_date_time
            FROM range(0, {VALIDATORS})
        """)

    def backlog(self) -> None:
        """What exists before the services start: the backlog of every source, and the entities."""
        self.blocks(T0, T0 + BACKLOG_S)
        self.transactions(T0, TRANSACTIONS_BACKLOG_END)
        self.entities(T0)

    @staticmethod
    def _blocks_select(start: int, end: int, clients: tuple[int, ...]) -> str:
        return f"""
            SELECT t DIV {SLOT_S} AS slot, timestamp_seconds(t) AS slot_start_date_time,
                   sha2(concat('block-', t), 256) AS block_root,
                   pmod(t DIV {SLOT_S} * 7, {VALIDATORS}) AS proposer_index,
                   concat('client-', c) AS meta_client_name,
                   CAST(pmod(hash(t, c), 6000) AS BIGINT) AS propagation_slot_start_diff
            FROM range({first_slot_time(start)}, {end}, {SLOT_S}) AS r(t)
            CROSS JOIN (SELECT explode(array({', '.join(map(str, clients))})) AS c)
        """


@dataclass(frozen=True)
class Step:
    at_s: float
    """Seconds after the services' start."""
    what: str
    write: Callable[[Sources], None]
    writes: tuple[tuple[str, int], ...] = ()
    """Each source it takes further and the end (exclusive) of the positions it then holds."""


def timeline() -> list[Step]:
    """Every write after the services' start, in order (see the module docstring)."""
    steps: list[Step] = []
    head = T0 + BACKLOG_S
    for k in range(1, GROWTH_STEPS + 1):
        low, high = head + (k - 1) * STEP_S, head + k * STEP_S
        late = (low - STEP_S, low) if k > 1 else None
        steps.append(Step(k * STEP_S, f"blocks [{low}, {high}) clients 1-2, late client 3 of {late}",
                          partial(Sources.blocks, start=low, end=high, clients=(1, 2), late=late),
                          (("beacon_blocks", high),)))
        if k == STALL_UNTIL_STEP:
            steps.append(Step(k * STEP_S, f"transactions catch up: [{TRANSACTIONS_BACKLOG_END}, {high}) in one batch",
                              partial(Sources.transactions, start=TRANSACTIONS_BACKLOG_END, end=high),
                              (("raw_transactions", high),)))
        elif k > STALL_UNTIL_STEP:
            steps.append(Step(k * STEP_S, f"transactions [{low}, {high})",
                              partial(Sources.transactions, start=low, end=high), (("raw_transactions", high),)))
    last = head + (GROWTH_STEPS - 1) * STEP_S
    steps.append(Step((GROWTH_STEPS + 1) * STEP_S, f"late client 3 of [{last}, {HEAD_END})",
                      lambda s: s.blocks(last, HEAD_END, (3,))))
    steps.append(Step(HISTORY_AT_S, f"older transactions [{HISTORY_START}, {T0})",
                      lambda s: s.transactions(HISTORY_START, T0)))
    steps.append(Step(HISTORY_AT_S, f"older blocks [{HISTORY_START}, {T0})", lambda s: s.blocks(HISTORY_START, T0)))
    return steps


def final_bounds() -> tuple[int, int]:
    """``[min, max)`` every time-positioned source's scanned bounds reach once everything has landed."""
    last_slot = (HEAD_END - 1) // SLOT_S * SLOT_S
    return HISTORY_START, last_slot + 1


@dataclass
class DataDriver:
    """Writes the timeline from a thread of its own, each step at its time after ``started``."""

    sources: Sources
    started: float
    done: list[dict[str, float | str]] = field(default_factory=list)
    landed: list[tuple[int, str, int]] = field(default_factory=list)
    """Each write that took a source further: when it landed (unix ms), the source, the end it then holds."""
    error: BaseException | None = None
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="bench-data", daemon=True)
        self._thread.start()

    def join(self, timeout_s: float) -> None:
        if self._thread is not None:
            self._thread.join(timeout_s)

    @property
    def is_finished(self) -> bool:
        return self._thread is not None and not self._thread.is_alive()

    def _run(self) -> None:
        try:
            for step in timeline():
                delay = self.started + step.at_s - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                began = time.monotonic()
                step.write(self.sources)
                self.done.append({"at_s": round(began - self.started, 1), "what": step.what,
                                  "write_s": round(time.monotonic() - began, 2)})
                self.landed.extend((time.time_ns() // 1_000_000, source, end) for source, end in step.writes)
        except BaseException as e:  # reported by the bench, which then stops waiting
            self.error = e
