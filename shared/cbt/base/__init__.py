"""The bottom layer: what every other package of ``cbt`` uses, and which itself imports no other ``cbt`` package.

- ``errors``: the root exception ``CbtError``, ``Problem`` (``path:line: field: problem``) and the error kinds;
- ``yamldoc``: YAML parsing that remembers where every key was written (``SourceMap``, ``Loc``);
- ``problems``: pydantic validation errors as ``Problem`` lines;
- ``cron``: schedules and durations;
- ``reserved_env``: the environment names cbt sets for exec models, which users may not set.
- ``tasks``: the task vocabulary — task ids, why a task runs (``TaskDirection``), which fill plans it.

This package stays import-light: importing it imports none of its modules (``cbt --help`` imports only ``errors``).

The layers, bottom to top (a package imports only from the layers below it; ``|`` separates packages of one layer,
which are independent of each other). ``.importlinter`` at the repository's root holds this order and ``make lint``
checks it:

    cbt.base
    cbt.config
    cbt.models
    cbt.contract
    cbt.scheduling
    cbt.observability
    cbt.state
    cbt.planning | cbt.concurrency
    cbt.adapters
    cbt.service
    cbt.import_cbt
    cbt.cli
    cbt.coordinator | cbt.worker | cbt.bounds_cache | cbt.invalidator | cbt.api    (the services, one distribution each)
    cbt.dev
"""
