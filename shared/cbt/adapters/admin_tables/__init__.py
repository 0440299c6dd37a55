"""The Delta admin tables, one module per table, each with its column spec (``columns.TableSpec``) from which the
table's DDL, the rows appended to it and its reads derive: ``completions`` (``cbt_incremental``), ``scheduled``,
``invalidations``, ``failures`` and ``retries``. They share one ``session.AdminSession``; the coverage protocol's
SQL (live parts, consolidation, epochs) is ``protocol_sql``. ``cbt.adapters.delta_admin.DeltaAdmin`` composes them."""
