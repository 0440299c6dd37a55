"""The api service (docs/design/interfaces.md#rest-api): REST ``/api/v1`` with OpenAPI, live events over server-sent
events, and the web UI (``cbt.api.ui``), served by ``cbt run api`` (``cbt.api.app``)."""
