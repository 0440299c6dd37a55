"""``cbt_config_overrides``: every change of a live config override (``cbt.models.live_overrides``), history kept;
a model's override is its latest row (cleared when that row's ``override`` is NULL). The durable copy of Redis's
``{prefix}overrides`` hash, which is restored from it when Redis was emptied."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from cbt.adapters.admin_tables.columns import Column, TableSpec, timestamp
from cbt.adapters.admin_tables.session import AdminSession, TableName, qualified
from cbt.models.spec import ModelId
from cbt.state.admin_records import split_model_id

OVERRIDES_TABLE = "cbt_config_overrides"
OVERRIDES = TableSpec(
    columns=(
        Column("updated_date_time", "TIMESTAMP", "when the override was set or cleared", read_as="updated_ms"),
        Column("database", "STRING"),
        Column("table", "STRING"),
        Column("override", "STRING", "JSON object of the fields set; NULL: cleared"),
        Column("who", "STRING", "fingerprint of the API token, or cli:<user>"),
    ),
    comment="cbt: every change of a live config override (the latest row per model is in force)",
)


class OverridesTable:
    """Implements ``cbt.state.override_ports.OverrideRecord``."""

    def __init__(self, session: AdminSession, name: TableName) -> None:
        self._session = session
        self.database = name[0]
        self.name = qualified(name)
        self.name_parts = name

    def ensure(self) -> None:
        self._session.ensure(self.name, OVERRIDES)

    def record_override(self, model_id: ModelId, fields: Mapping[str, Any] | None, who: str, at_ms: int) -> None:
        row = OVERRIDES.row(override_row(model_id, fields, who, at_ms))
        self._session.append("record config override", self.name, OVERRIDES.schema(), [row])

    def current_overrides(self) -> dict[ModelId, dict[str, Any]]:
        """Each model's override in force: its latest row, unless that row cleared it."""
        statement = f"""SELECT `database`, `table`, override FROM (
  SELECT *, row_number() OVER (PARTITION BY `database`, `table` ORDER BY updated_date_time DESC) AS rn
  FROM {self.name}
) WHERE rn = 1 AND override IS NOT NULL"""
        rows = self._session.sql("read config overrides", statement)
        out: dict[ModelId, dict[str, Any]] = {}
        for row in rows:
            fields = json.loads(row["override"])
            if isinstance(fields, dict):
                out[f"{row['database']}.{row['table']}"] = fields
        return out


def override_row(model_id: ModelId, fields: Mapping[str, Any] | None, who: str, at_ms: int) -> dict[str, object]:
    database, table = split_model_id(model_id)
    text = None if fields is None else json.dumps(dict(fields), sort_keys=True)
    return {"updated_date_time": timestamp(at_ms), "database": database, "table": table, "override": text, "who": who}


def overrides_table(session: AdminSession, admin_database: str) -> OverridesTable:
    """The table beside the other admin tables (in ``admin.incremental``'s database)."""
    return OverridesTable(session, (admin_database, OVERRIDES_TABLE))
