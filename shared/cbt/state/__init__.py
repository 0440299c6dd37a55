"""Stored state: ``ports`` (the protocols adapters implement, each declared once) and ``admin_records`` (rows of the
durable admin tables as values). Planning over it is ``cbt.planning``."""
