"""The read API (``/api/v1/tables``): exposed tables' rows read from their Delta files, with typed filters and pages."""
