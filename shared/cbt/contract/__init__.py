"""The message contract between services (docs/design/services.md#messages): ``messages`` (bodies) and ``topics``
(names). Pure."""
