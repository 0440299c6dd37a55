"""``cbt_model_versions``: every version of every model as it was deployed (``cbt.models.deployment``), history
kept; a model's deployed version is its latest row. The definition is kept whole, so a later deployment is
classified against it without the old files."""

from __future__ import annotations

import json
from collections.abc import Iterable

from cbt.adapters.admin_tables.columns import Column, ReadRow, TableSpec, timestamp
from cbt.adapters.admin_tables.session import AdminSession, TableName, qualified
from cbt.models.deployment import DeployedVersion, current_states
from cbt.models.spec import ModelId
from cbt.state.admin_records import split_model_id

VERSIONS_TABLE = "cbt_model_versions"
VERSIONS = TableSpec(
    columns=(
        Column("deployed_date_time", "TIMESTAMP", "when the version was deployed", read_as="deployed_ms"),
        Column("database", "STRING"),
        Column("table", "STRING"),
        Column("version", "BIGINT", "1 for the first version deployed, then one more per change of its rows"),
        Column("data_hash", "STRING", "fingerprint of what determines its rows"),
        Column("metadata_hash", "STRING", "hash of what does not (tags, schedules, …)"),
        Column("category", "STRING", "new, breaking, non-breaking or metadata"),
        Column("reasons", "STRING", "JSON array: why, e.g. column total: expression changed"),
        Column("definition", "STRING", "JSON: the normalised SQL or exec command and the fields that change rows"),
        Column("spec", "STRING", "JSON: the whole model, so this version runs without its files (cbt.models.stored)"),
        Column("state", "STRING", "live, building, retired or superseded; the latest row of a version is its state"),
        Column("build_table", "STRING", "where a building version is built (database.table)"),
        Column("table_version", "BIGINT", "a retired version: the Delta version of the table it last served"),
        Column("covered_end", "BIGINT", "a retired version: where the model's coverage ended at the switch"),
        Column("table_location", "STRING", "where the version's rows are, once a switch moved the model's name"),
    ),
    comment="cbt: every version of every model as deployed (the latest row per model is deployed)",
)

ADDED_COLUMNS = ("spec", "state", "build_table", "table_version", "covered_end", "table_location")
"""Columns a table recorded by an earlier version lacks: their rows read as live versions without a spec."""


class VersionsTable:
    """Implements ``cbt.models.deployment.VersionRecord`` through Spark."""

    def __init__(self, session: AdminSession, name: TableName) -> None:
        self._session = session
        self.database = name[0]
        self.name = qualified(name)
        self.name_parts = name

    def ensure(self) -> None:
        self._session.ensure(self.name, VERSIONS,
                             lambda: self._session.add_columns(self.name, VERSIONS, list(ADDED_COLUMNS)))

    def record_versions(self, versions: list[DeployedVersion]) -> None:
        if versions:
            self._session.append("record model versions", self.name, VERSIONS.schema(),
                                 [VERSIONS.row(version_row(v)) for v in versions])

    def deployed_versions(self) -> dict[ModelId, DeployedVersion]:
        statement = f"""SELECT {VERSIONS.select()} FROM (
  SELECT *, row_number() OVER (PARTITION BY `database`, `table` ORDER BY deployed_date_time DESC, version DESC) AS rn
  FROM {self.name}
) WHERE rn = 1"""
        return latest(self._session.sql("read model versions", statement))

    def all_versions(self) -> list[DeployedVersion]:
        return current_states(map(version_from, self._session.sql(
            "read every model version", f"SELECT {VERSIONS.select()} FROM {self.name}")))


def version_row(version: DeployedVersion) -> dict[str, object]:
    database, table = split_model_id(version.model)
    return {"deployed_date_time": timestamp(version.deployed_ms), "database": database, "table": table,
            "version": version.version, "data_hash": version.data_hash, "metadata_hash": version.metadata_hash,
            "category": version.category, "reasons": json.dumps(list(version.reasons)),
            "definition": json.dumps(dict(version.definition), sort_keys=True),
            "spec": None if version.spec is None else json.dumps(dict(version.spec), sort_keys=True),
            "state": version.state, "build_table": version.build_table, "table_version": version.table_version,
            "covered_end": version.covered_end, "table_location": version.table_location}


def version_from(row: ReadRow) -> DeployedVersion:
    return DeployedVersion(
        model=f"{row['database']}.{row['table']}", version=int(row["version"]), data_hash=row["data_hash"],
        metadata_hash=row["metadata_hash"], definition=json.loads(row["definition"]), category=row["category"],
        reasons=tuple(json.loads(row["reasons"] or "[]")), deployed_ms=int(row["deployed_ms"] or 0),
        spec=json.loads(row["spec"]) if row["spec"] else None, state=row["state"] or "live",
        build_table=row["build_table"], table_version=_int_or_none(row["table_version"]),
        covered_end=_int_or_none(row["covered_end"]), table_location=row["table_location"])


def _int_or_none(value: object) -> int | None:
    return None if value is None else int(str(value))


def latest(rows: Iterable[ReadRow]) -> dict[ModelId, DeployedVersion]:
    """Each model's latest version among ``rows`` (the newest deployment; the higher version on a tie)."""
    out: dict[ModelId, DeployedVersion] = {}
    for version in map(version_from, rows):
        seen = out.get(version.model)
        if seen is None or (version.deployed_ms, version.version) > (seen.deployed_ms, seen.version):
            out[version.model] = version
    return out
