"""The files ``cbt init`` writes: a project small enough to read in a minute that runs on the local stack.

Pure: a name (and the local Spark's warehouse, when known) in, ``{relative path: text}`` out. Every name the project
uses carries the project's name — its databases, topic prefix, Redis key prefix — so two projects (or a project and
the demo) share one local stack without touching each other's state.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")
"""A project's name becomes database names, a topic prefix and a key prefix: lower-case letters, digits, ``_``."""

SAMPLE_START = 1_767_225_600
"""The sample orders start at 2026-01-01 00:00:00 UTC (unix seconds): fixed, so every run shows the same positions."""
SAMPLE_ORDERS = 720
SAMPLE_EVERY_S = 5
"""One order every 5 seconds for an hour."""


@dataclass(frozen=True)
class Project:
    name: str

    @property
    def source_database(self) -> str:
        return f"{self.name}_raw"

    @property
    def database(self) -> str:
        return self.name

    @property
    def admin_database(self) -> str:
        return f"{self.name}_admin"

    @property
    def databases(self) -> tuple[str, ...]:
        """Every database the project's pipeline makes or reads (the sample source, the models', the admin record)."""
        return self.source_database, self.database, self.admin_database


def project_files(project: Project, warehouse: str | None) -> Mapping[str, str]:
    return {
        "config.yaml": _config(project, warehouse),
        "sample_data.sql": _sample_data(project),
        "models/external/orders.sql": _EXTERNAL,
        "models/transformations/orders_per_minute.sql": _TRANSFORMATION,
        "README.md": _README.format(name=project.name, src=project.source_database, db=project.database),
    }


def sample_data_statements(project: Project) -> list[str]:
    """``sample_data.sql`` as statements, in order."""
    return [s.strip() for s in _strip_comments(_sample_data(project)).split(";") if s.strip()]


def _strip_comments(sql: str) -> str:
    return "\n".join(line for line in sql.splitlines() if not line.lstrip().startswith("--"))


def _config(project: Project, warehouse: str | None) -> str:
    admin = "\n".join(f"  {table}: {{database: {project.admin_database}}}"
                      for table in ("incremental", "scheduled", "invalidations", "failures", "retries"))
    warehouse_line = (f"  warehouse: {warehouse}   # the local Spark's managed tables: the services keep their "
                      f"records there without a Spark statement"
                      if warehouse else
                      "  # warehouse: <the Spark server's spark.sql.warehouse.dir>   # unset: records go through Spark")
    read_api = (f"  tables:\n    warehouse: {warehouse}   # the read API (`cbt rows`) reads exposed tables there\n"
                if warehouse else "")
    return f"""\
# The {project.name} project, written by `cbt init` for the local stack (`cbt dev up`). Every key not written here
# has a default (the repository's config.yaml lists them all); CBT__SECTION__KEY=value overrides any key.

kafka:
  bootstrap_servers: 127.0.0.1:9092
  topic_prefix: {project.name}.         # this project's topics: {project.name}.tasks.default, ...

redis:
  url: redis://127.0.0.1:6379/0
  key_prefix: "{project.name}:"

spark:
  remote: sc://127.0.0.1:15002
{warehouse_line}

admin:                            # the record of what each model covers
{admin}

models:
  external:
    paths: [models/external]
    default_database: {project.source_database}
  transformations:
    paths: [models/transformations]
    default_database: {project.database}

api:
  addr: 127.0.0.1:8080            # the web UI and the REST API
{read_api}"""


def _sample_data(project: Project) -> str:
    return f"""\
-- The sample source: {SAMPLE_ORDERS} orders, one every {SAMPLE_EVERY_S} seconds from 2026-01-01 00:00 UTC.
-- `cbt init` runs this through Spark Connect; running it again recreates the same table.
CREATE DATABASE IF NOT EXISTS {project.source_database};

CREATE OR REPLACE TABLE {project.source_database}.orders USING delta AS
SELECT
  id AS order_id,
  timestamp_seconds({SAMPLE_START} + id * {SAMPLE_EVERY_S}) AS order_time,
  concat('customer_', abs(hash(id)) % 9) AS customer,
  CAST((id * 7919) % 10000 / 100 AS DECIMAL(10, 2)) AS amount
FROM range({SAMPLE_ORDERS});
"""


_EXTERNAL = """\
---
# The orders table, which something else writes (here: sample_data.sql). An external model tells cbt where the
# data is and how far it reaches: its bounds, as positions (unix seconds of order_time). Bounds are half-open:
# max is one past the newest second.
table: orders                   # database: models.external.default_database in config.yaml
interval:
  type: timestamp
cache:
  incremental_scan_interval: 5s # look for new rows this often
  full_scan_interval: 1m        # and rescan the whole table this often
---
SELECT
  unix_seconds(min(order_time)) AS min,
  unix_seconds(max(order_time)) + 1 AS max
FROM {{ self.from }}
"""

_TRANSFORMATION = """\
---
# Orders and revenue per minute. cbt runs this SELECT once per interval of 60 positions (one minute) that its
# dependency covers, forward as data arrives and backward to fill gaps, and records what each run covered.
type: incremental
table: orders_per_minute        # database: models.transformations.default_database in config.yaml
interval:
  max: 60
  type: timestamp
schedules:
  forwardfill: "@every 5s"
  backfill: "@every 30s"
dependencies:
  - {{external}}.orders
expose:                         # served by the api's read API (and `cbt rows`)
  key: [minute]
  position: minute
write:
  strategy: replace             # each run replaces its interval's rows in one Delta commit
  replace_where: >-
    minute >= timestamp_seconds({{ bounds.start }}) AND minute < timestamp_seconds({{ bounds.end }})
---
SELECT
  date_trunc('minute', order_time) AS minute,
  count(*) AS orders,
  sum(amount) AS revenue
FROM {{ ref("{{external}}.orders") }}
WHERE order_time >= timestamp_seconds({{ bounds.start }})
  AND order_time < timestamp_seconds({{ bounds.end }})
GROUP BY 1
"""

_README = """\
# {name}

A cbt project written by `cbt init`: one external model (`{src}.orders`, sample data) and one transformation
(`{db}.orders_per_minute`). The tutorial (docs/tutorial.md in the cbt repository) walks through it.

    cbt dev up                      # the local stack: Kafka, Redis, Spark Connect (from the cbt repository)
    cbt validate                    # every model file checked
    cbt plan                        # what would run now, and why not more
    cbt run all                     # the services; the web UI is on http://127.0.0.1:8080
    cbt status                      # what each model covers

`sample_data.sql` made the source table; `cbt init --sample-data-only .` makes it again.
"""
