"""The bottom layer: what every other package of ``cbt`` uses, and which itself imports no other ``cbt`` package.

- ``errors``: the root exception ``CbtError``, ``Problem`` (``path:line: field: problem``) and the error kinds;
- ``yamldoc``: YAML parsing that remembers where every key was written (``SourceMap``, ``Loc``);
- ``problems``: pydantic validation errors as ``Problem`` lines;
- ``cron``: schedules and durations;
- ``reserved_env``: the environment names cbt sets for exec models, which users may not set.
- ``tasks``: the task vocabulary — task ids, why a task runs (``TaskDirection``), which fill plans it.

This package stays import-light: importing it imports none of its modules (``cbt --help`` imports only ``errors``).

The layer order of every ``cbt`` package (this one at the bottom) is written once, in ``.importlinter`` at the
repository's root, and ``make lint`` checks it.
"""
