"""The api service (SPEC §9): REST ``/api/v1`` and the web UI. Its distribution exists so the layout is complete;
the service itself is not built yet (issue 14), so it registers no ``cbt.services`` entry point and ``cbt run``
does not offer it."""
