"""Models: the files users write, validated into frozen spec values and a DAG.

Public entry points (import the modules directly; this package stays import-light):
- ``cbt.models.loader.load_models(config) -> ModelSet`` (raises ``ModelProblems`` listing every problem) and
  ``load_project(config_path) -> (Config, ModelSet)``;
- ``cbt.models.dag.ModelSet``: models by id, dependencies/dependents/descendants, topological order, ``resolve``;
- ``cbt.models.render``: ``render_statements``, ``render_replace_where``, ``render_bounds_query``,
  ``exec_environment``, ``external_exec_environment``, ``exec_argv``, ``redact_env``;
- ``cbt.models.templates``: ``RenderSettings.from_config``, ``TaskContext``, ``ScanContext``;
- ``cbt.models.sqlsplit.split_sql``; ``cbt.models.spec``: the value types.
"""
