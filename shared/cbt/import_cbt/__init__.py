"""``cbt import-cbt SRC DEST``: a project of the original CBT (Go, ClickHouse) converted into one of ours
(docs/coming-from-cbt.md).

Pure conversion — ``config_map`` (config.yaml), ``model`` (frontmatter), ``gotemplate`` and ``functions`` (Go
templates and Sprig → Jinja), ``clickhouse`` and ``clickhouse_functions`` (ClickHouse SQL → Spark SQL with sqlglot),
``writes`` (the idempotency idiom → a write strategy), ``ddl`` (the tables' engines and keys), ``project`` (all of it
over file contents) — and one module of file I/O (``files``). What cannot be converted is a ``report.Note``:
``file:line: what: what to do``.
"""
