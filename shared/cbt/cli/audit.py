"""The audit row of a ``cbt`` command that changes the stores itself (``cbt rerun``, ``rollback``, ``override
set|clear``, ``bounds set|delete``, ``admin consolidate|rebuild-cache``): one row in ``cbt_api_actions``, beside the
api's own, ``who`` being ``cli:<user>@<host>`` (docs/operations/security.md). Written through Spark, after the change:
a change made whose row cannot be written is said on stderr, not undone."""

from __future__ import annotations

import getpass
import socket
import sys
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cbt.config.settings import Config


def who() -> str:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"cli:{user}@{socket.gethostname()}"


def record_change(config: Config, action: str, target: str, detail: Mapping[str, object]) -> bool:
    """Whether the row was written."""
    from cbt.adapters.admin_tables.audit import AUDIT_TABLE, AuditTable
    from cbt.adapters.admin_tables.session import AdminSession
    from cbt.adapters.spark import connect, quote_identifier
    from cbt.state.admin_records import AuditAction

    database = config.admin.incremental.database
    try:
        session = AdminSession(connect(config.spark.remote or ""))
        session.create("create database", f"CREATE DATABASE IF NOT EXISTS {quote_identifier(database)}")
        table = AuditTable(session, (database, AUDIT_TABLE))
        table.ensure()
        table.record_action(AuditAction(int(time.time() * 1000), who(), action, target, dict(detail)))
    except Exception as e:
        print(f"warning: the change is made, but its audit row in {database}.{AUDIT_TABLE} is not "
              f"({type(e).__name__}: {e})", file=sys.stderr)
        return False
    return True
