"""Spark Connect sessions: one long-lived client session per process, never a JVM in ours."""

from __future__ import annotations

from pyspark.sql import SparkSession


def connect(remote: str) -> SparkSession:
    """A new Spark Connect client session on ``remote`` (``sc://host:port``)."""
    session: SparkSession = SparkSession.builder.remote(remote).create()
    return session


def quote_identifier(name: str) -> str:
    """Back-quote one identifier part for Spark SQL."""
    return "`" + name.replace("`", "``") + "`"
