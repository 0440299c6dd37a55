"""The message contract between services (SPEC §6): ``messages`` (bodies) and ``topics`` (names). Pure."""
