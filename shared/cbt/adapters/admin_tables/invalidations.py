"""``cbt_invalidations``: every accepted invalidation, what it affected and the epoch it was recorded under.

Recording one reads the table to allocate the next epoch inside the same commit (``protocol_sql``), retried when a
concurrent record makes Delta refuse it.
"""

from __future__ import annotations

import json
from collections.abc import Collection

from cbt.adapters.admin_tables import protocol_sql as q
from cbt.adapters.admin_tables.columns import Column, ReadRow, TableSpec, timestamp
from cbt.adapters.admin_tables.session import AdminSession, AdminTableError, TableName, qualified
from cbt.models.spec import ModelId
from cbt.scheduling.task_runs import TaskRun
from cbt.state.admin_records import (
    InvalidationRecord,
    decode_metadata,
    decode_ranges,
    decode_seqs,
    encode_metadata,
    encode_ranges,
    encode_seqs,
    split_model_id,
)

INVALIDATIONS = TableSpec(
    columns=(
        Column("received_date_time", "TIMESTAMP", read_as="received_ms"),
        Column("id", "STRING"),
        Column("database", "STRING"),
        Column("table", "STRING"),
        Column("start", "BIGINT"),
        Column("end", "BIGINT", "invalidated [start, end)"),
        Column("reason", "STRING"),
        Column("source", "STRING"),
        Column("cascade", "BOOLEAN"),
        Column("metadata", "STRING", "JSON object"),
        Column("affected", "STRING", "JSON: model -> [[start, end, step], ...] runs of tasks removed"),
        Column("seq", "STRING", "JSON: model -> invalidation sequence after this event"),
    ),
    comment="cbt: every accepted invalidation and what it affected",
)


PRUNE_BATCH = 500
"""Records deleted per statement (each id is one bound parameter)."""


class InvalidationsTable:
    def __init__(self, session: AdminSession, name: TableName) -> None:
        self._session = session
        self.database = name[0]
        self.name = qualified(name)
        self.name_parts = name

    def ensure(self) -> None:
        self._session.ensure(self.name, INVALIDATIONS)

    def record_invalidation(self, record: InvalidationRecord) -> InvalidationRecord:
        """Record an accepted invalidation under a new epoch and return it as stored: an id already recorded comes
        back as first recorded (its epoch and ranges), so a redelivered event is applied exactly as the first time."""
        database, table = split_model_id(record.model)
        params: dict[str, object] = {
            "received_ms": record.received_at_ms, "id": record.id, "db": database, "tbl": table,
            "start": record.start, "end": record.end, "reason": record.reason, "source": record.source,
            "cascade": record.cascade, "metadata": encode_metadata(record.metadata),
            "affected": encode_ranges(record.affected), "models": json.dumps(sorted(record.affected)),
        }  # fmt: skip
        statement = q.insert_invalidation_statement(self.name, INVALIDATIONS.names)
        self._session.rewrite(f"record invalidation {record.id}", statement, params)
        rows = self._session.sql(f"read invalidation {record.id}",
                                 f"SELECT {INVALIDATIONS.select()} FROM {self.name} WHERE id = :id", {"id": record.id})
        if len(rows) != 1:
            raise AdminTableError(f"admin tables: invalidation {record.id}: expected one record, found {len(rows)}")
        return invalidation_from(rows[0])

    def invalidations(self, limit: int = 100) -> list[InvalidationRecord]:
        """Recorded invalidations, newest first."""
        statement = f"""SELECT {INVALIDATIONS.select()}
FROM {self.name} ORDER BY received_date_time DESC, id LIMIT :limit"""
        return [invalidation_from(row) for row in self._session.sql("read invalidations", statement, {"limit": limit})]

    def invalidated_ranges(self, model_ids: Collection[ModelId]) -> dict[ModelId, tuple[TaskRun, ...]]:
        """Every run of tasks ever recorded as invalidated per model (models never invalidated are absent)."""
        statement, params = q.invalidated_ranges_query(self.name, model_ids)
        out: dict[ModelId, list[TaskRun]] = {}
        for row in self._session.sql("read invalidated ranges", statement, params):
            run = TaskRun(int(row["range_start"]), int(row["range_end"]), int(row["step"]))
            out.setdefault(row["model"], []).append(run)
        return {m: tuple(sorted(rs)) for m, rs in out.items()}

    def prune_invalidations(self, incremental: str, received_before_ms: int) -> list[InvalidationRecord]:
        """Delete the records received before ``received_before_ms`` that change nothing once gone
        (``cbt.scheduling.protocol.is_prunable``, for every model they name) and return them."""
        statement = q.prunable_invalidations_query(incremental, self.name, INVALIDATIONS.select())
        found = [invalidation_from(row) for row in self._session.sql(
            "find prunable invalidations", statement, {"before_ms": received_before_ms})]
        for first in range(0, len(found), PRUNE_BATCH):
            batch = found[first:first + PRUNE_BATCH]
            params: dict[str, object] = {f"i{n}": r.id for n, r in enumerate(batch)}
            ids = ", ".join(f":{k}" for k in params)
            self._session.rewrite("prune invalidations", f"DELETE FROM {self.name} WHERE id IN ({ids})", params)
        return found

    def invalidation_seqs(self, model_ids: Collection[ModelId] | None = None) -> dict[ModelId, int]:
        """The highest recorded invalidation sequence per model; models never invalidated are absent."""
        statement, params = q.seqs_query(self.name, model_ids)
        rows = self._session.sql("read invalidation sequences", statement, params)
        return {row["model"]: int(row["seq"]) for row in rows}


def invalidation_row(record: InvalidationRecord, epoch: int) -> dict[str, object]:
    """``record`` as stored under ``epoch`` (every model it affected gets that epoch)."""
    database, table = split_model_id(record.model)
    return {
        "received_date_time": timestamp(record.received_at_ms), "id": record.id, "database": database,
        "table": table, "start": record.start, "end": record.end, "reason": record.reason, "source": record.source,
        "cascade": record.cascade, "metadata": encode_metadata(record.metadata),
        "affected": encode_ranges(record.affected), "seq": encode_seqs({m: epoch for m in record.affected}),
    }  # fmt: skip


def invalidation_from(row: ReadRow) -> InvalidationRecord:
    return InvalidationRecord(
        id=row["id"],
        model=f"{row['database']}.{row['table']}",
        start=int(row["start"]),
        end=int(row["end"]),
        reason=row["reason"] or "",
        source=row["source"] or "",
        cascade=bool(row["cascade"]),
        metadata=decode_metadata(row["metadata"]),
        affected=decode_ranges(row["affected"]),
        seqs=decode_seqs(row["seq"]),
        received_at_ms=int(row["received_ms"]),
    )
