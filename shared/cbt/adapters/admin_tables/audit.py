"""``cbt_api_actions``, beside ``cbt_incremental``: one row per change an operator made — through the api (``who``:
a token's fingerprint) or with a ``cbt`` command that writes to the stores itself (``who``: ``cli:<user>@<host>``).
Through Spark, as the api reads it."""

from __future__ import annotations

import json

from cbt.adapters.admin_tables.columns import Column, TableSpec, timestamp
from cbt.adapters.admin_tables.session import AdminSession, TableName, qualified
from cbt.state.admin_records import AuditAction

AUDIT_TABLE = "cbt_api_actions"
AUDIT = TableSpec(
    columns=(
        Column("action_date_time", "TIMESTAMP", "when the change was made", read_as="at_ms"),
        Column("who", "STRING", "fingerprint of the bearer token (never the token itself), or cli:<user>@<host>"),
        Column("action", "STRING", "rerun | run-now | bounds-refresh | bounds-set | bounds-delete | consolidate | …"),
        Column("target", "STRING", "the model"),
        Column("detail", "STRING", "JSON: the request and what it started (event or task id)"),
    ),
    comment="cbt: every change made through the REST API or by a cbt command",
)
"""``cbt_api_actions``: one row per change."""


class AuditTable:
    def __init__(self, session: AdminSession, name: TableName) -> None:
        self._session = session
        self.name = qualified(name)

    def ensure(self) -> None:
        self._session.create(f"create {self.name}", AUDIT.create(self.name))

    def record_action(self, action: AuditAction) -> None:
        """Append one change (one Delta commit)."""
        row = AUDIT.row({
            "action_date_time": timestamp(action.at_ms), "who": action.who, "action": action.action,
            "target": action.target, "detail": json.dumps(dict(action.detail), sort_keys=True, default=str),
        })  # fmt: skip
        self._session.append("record an action", self.name, AUDIT.schema(), [row])

    def actions(self, limit: int) -> list[AuditAction]:
        """The latest changes, newest first."""
        statement = f"SELECT {AUDIT.select()} FROM {self.name} ORDER BY action_date_time DESC LIMIT :limit"
        return [AuditAction(at_ms=int(r["at_ms"]), who=r["who"] or "", action=r["action"] or "",
                            target=r["target"] or "", detail=_object(r["detail"]))
                for r in self._session.sql("read the actions", statement, {"limit": limit})]


def _object(text: str | None) -> dict[str, object]:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {"unreadable": text}
    return value if isinstance(value, dict) else {"value": value}
