"""The REST API's own routes under ``/api/v1``: models, the pipeline, operator actions, bounds, overrides, and a
task's rendered SQL."""
