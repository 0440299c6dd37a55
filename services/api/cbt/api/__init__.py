"""The api service (SPEC §9): REST ``/api/v1`` with OpenAPI, live events over server-sent events, and the web UI
(``cbt.api.ui``), served by ``cbt run api`` (``cbt.api.app``)."""
