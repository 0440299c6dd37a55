"""The compose stack's Spark, authenticated: Spark Connect refuses a client without its token (and one with a wrong
token) while the services' remote with the token runs a job on the cluster's executors, and a Spark worker started
on the stack's network with a wrong cluster secret cannot join the master (spark.authenticate)."""

from __future__ import annotations

import re
import subprocess
import sys
import time
import uuid
from collections.abc import Callable

import pytest

from tests.containers.compose import DOCKER, ComposeStack
from tests.containers.conftest import VERSION, skip_unless_enabled

pytestmark = [pytest.mark.containers, skip_unless_enabled(), pytest.mark.timeout(600)]


PROBE = """
import sys
from pyspark.sql import SparkSession
session = SparkSession.builder.remote(sys.argv[1]).create()
try:
    session.client.set_retry_policies([])
    print(int(session.range(1000).selectExpr("sum(id)").collect()[0][0]))
finally:
    session.stop()
"""


def sum_on_the_cluster(remote: str) -> int:
    """SUM(0..999) computed by the cluster's executors, through a session on ``remote`` that does not retry — in a
    process of its own: PySpark shares a thread pool between a process's sessions, and a refused session's stop could
    shut it down under the next one ("cannot schedule new futures after shutdown")."""
    done = subprocess.run([sys.executable, "-c", PROBE, remote], capture_output=True, text=True, timeout=300,
                          check=False)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return int(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(("remote_of", "refusal"), [
    pytest.param(lambda s: f"sc://127.0.0.1:{s.ports['SPARK']}", "No authentication token provided", id="no-token"),
    pytest.param(lambda s: f"sc://127.0.0.1:{s.ports['SPARK']}/;authorization=Bearer%20{uuid.uuid4().hex}",
                 "Invalid authentication token", id="wrong-token"),
])
def test_spark_connect_refuses_a_client_without_its_token(stack: ComposeStack,
                                                          remote_of: Callable[[ComposeStack], str],
                                                          refusal: str) -> None:
    with pytest.raises(Exception, match="UNAUTHENTICATED") as refused:
        sum_on_the_cluster(remote_of(stack))
    assert refusal in str(refused.value)
    assert sum_on_the_cluster(stack.spark_remote) == 499500  # the services' remote, with the token


def test_a_spark_worker_with_a_wrong_secret_cannot_join_the_master(stack: ComposeStack) -> None:
    master = stack.container_ids("spark-master")[0]
    network = next(iter(_inspect(master, "{{range $k, $v := .NetworkSettings.Networks}}{{$k}} {{end}}").split()))
    rogue = f"{stack.project}-rogue-worker"
    subprocess.run([DOCKER, "run", "-d", "--name", rogue, "--network", network,
                    "-e", f"SPARK_AUTH_SECRET={uuid.uuid4().hex}", "-e", "SPARK_MASTER_URL=spark://spark-master:7077",
                    f"cbt/spark:{VERSION}", "worker"], capture_output=True, text=True, check=True, timeout=60)
    try:
        rogue_ip = _inspect(rogue, "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}").split()[0]
        deadline = time.monotonic() + 180
        while "Failed to connect to master" not in (log := _logs(rogue)):
            assert time.monotonic() < deadline, f"the rogue worker neither failed nor joined:\n{log[-2000:]}"
            time.sleep(2)
        assert "Successfully registered with master" not in log
        assert not re.search(rf"Registering worker {re.escape(rogue_ip)}:", _logs(master))
    finally:
        subprocess.run([DOCKER, "rm", "-f", rogue], capture_output=True, check=False, timeout=60)


def _inspect(container: str, template: str) -> str:
    return subprocess.run([DOCKER, "inspect", "--format", template, container], capture_output=True, text=True,
                          check=True, timeout=30).stdout


def _logs(container: str) -> str:
    done = subprocess.run([DOCKER, "logs", container], capture_output=True, text=True, check=False, timeout=60)
    return done.stdout + done.stderr
