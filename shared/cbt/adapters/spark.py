"""Spark Connect sessions: one long-lived client session per process, never a JVM in ours."""

from __future__ import annotations

from pyspark.sql import SparkSession

from cbt.models.templates import quote_part as quote_identifier

__all__ = ["connect", "quote_identifier"]


def connect(remote: str) -> SparkSession:
    """A new Spark Connect client session on ``remote`` (``sc://host:port``)."""
    session: SparkSession = SparkSession.builder.remote(remote).create()
    return session

