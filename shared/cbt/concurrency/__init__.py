"""Asyncio building blocks of the worker's pipeline: ``ordered_acks`` (commit offsets in arrival order) and
``groupcommit`` (callers share one durable flush)."""
