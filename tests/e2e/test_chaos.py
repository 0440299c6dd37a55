"""The chaos suite's short, deterministic subset (``make chaos`` runs the randomized rounds): the faults no other e2e
test covers — Spark Connect and the Kafka broker restarted, a worker SIGTERMed mid-task — in a fixed order, with a
hanging and an always-failing model in the pipeline, then the same checks: every healthy table equals the oracle
(nothing lost, nothing doubled, one covered range), and both misbehaving models were reported failed (the hung one
by its timeout, and in ``cbt status``) while the rest caught up. (SIGKILLs, Redis emptied, duplicates and an
invalidation while its range runs are in ``test_pipeline.py``.)"""

from __future__ import annotations

import random

import pytest
from pyspark.sql import SparkSession

from cbt.adapters.spark import SessionPool
from tests.chaos.rig import Chaos, chaos_deployment, verdict
from tests.conftest import Endpoints

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1500)]
SUBSET = ("restart-spark-connect", "restart-kafka", "sigterm-worker-mid-task")


def test_the_pipeline_survives_one_of_each_fault_and_the_misbehaving_models_stay_contained(
    endpoints: Endpoints, spark_sessions: SessionPool, spark: SparkSession
) -> None:
    try:
        with chaos_deployment(endpoints.spark_remote, endpoints.kafka_bootstrap, endpoints.redis_url, spark) as dep:
            chaos = Chaos(dep, random.Random(1))
            chaos.start()
            applied = [chaos.apply(kind) for kind in SUBSET]
            chaos.settle()
            result = verdict(dep)
    finally:
        spark_sessions.discard("tests", spark)  # Spark Connect restarted: the next test gets a live session
    assert [f.kind for f in applied if f.is_skipped] == [], "a fault asked for was not applied: it proves nothing"
    assert result.problems() == []
    assert result.lost_rows == 0 and result.duplicate_rows == 0
