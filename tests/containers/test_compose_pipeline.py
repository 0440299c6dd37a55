"""The example pipeline on the compose stack: every service in its own container from its own image, Spark on a
standalone cluster. It catches up and every derived table equals the oracle; then the worker is scaled to three with
``--scale``, one worker container is killed and another stopped while each runs a task, and the pipeline still
converges with no duplicate and no lost interval."""

from __future__ import annotations

import json
import time
import urllib.request

import pytest

from cbt.adapters.kafka_admin import admin_client
from cbt.models.spec import IncrementalModel
from tests.containers.compose import SERVICES, ComposeStack
from tests.containers.conftest import SOURCE_END, skip_unless_enabled
from tests.e2e.harness import T0, Deployment
from tests.e2e.test_pipeline import assert_equals_oracle

pytestmark = [pytest.mark.containers, skip_unless_enabled(), pytest.mark.timeout(1800)]
SECOND_END = SOURCE_END + 300
"""The second backlog, written once three workers consume: five more minutes."""


def last_slot_end(source_end: int) -> int:
    """Bounds max of the sources: one past the newest 12 s slot's second."""
    return source_end - 12 + 1


def wait_converged(stack: ComposeStack, dep: Deployment, min_end: int, gone: frozenset[str] = frozenset(),
                   timeout_s: float = 900, settle_s: float = 5) -> float:
    """Until the pipeline stays quiet for ``settle_s`` (nothing in flight or plannable, sources scanned up to
    ``min_end``) while no service container but those in ``gone`` has exited; returns the seconds it took."""
    started, quiet_since = time.monotonic(), None
    while time.monotonic() - started < timeout_s:
        crashed = {k: v for k, v in stack.exited().items() if k.split("/")[1] not in gone}
        assert not crashed, f"service containers exited: {crashed}; logs in {stack.save_logs()}"
        if dep.is_quiet(min_end):
            quiet_since = quiet_since or time.monotonic()
            if time.monotonic() - quiet_since >= settle_s:
                return time.monotonic() - started
        else:
            quiet_since = None
        time.sleep(1)
    raise AssertionError(f"no convergence within {timeout_s:.0f}s; logs in {stack.save_logs()}")


def task_holder(stack: ComposeStack, dep: Deployment, skip: set[str], timeout_s: float = 300) -> str:
    """A running worker container (its short id) that holds a task's lease right now, i.e. is mid-task: the lease
    owner is ``worker-<hostname>-…`` and a container's hostname is its short id."""
    prefix = f"{dep.config.redis.key_prefix}lease:task:"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        exited = {key.split("/")[1] for key in stack.exited(("worker",))}
        running = {cid[:12] for cid in stack.container_ids("worker")} - skip - exited
        for key in dep.redis.scan_iter(match=f"{prefix}*", count=1000):
            owner = (dep.redis.get(key) or b"").decode()
            host = owner.split("-")[1] if owner.startswith("worker-") else ""
            if host in running:
                return host
        time.sleep(0.05)
    raise AssertionError(f"no worker held a task within {timeout_s:.0f}s")


def assert_every_worker_consumes(dep: Deployment, workers: int, timeout_s: float = 120) -> None:
    """Each worker container holds some of the default pool's task partitions (a group's consumers beyond the
    partitions would get none): the group's members with an assignment come from ``workers`` hosts."""
    admin = admin_client(dep.config.kafka.bootstrap_servers, dict(dep.config.kafka.client))
    group = f"{dep.config.kafka.topic_prefix}worker.default"
    deadline, hosts = time.monotonic() + timeout_s, set()
    while time.monotonic() < deadline:
        (description,) = [f.result() for f in admin.describe_consumer_groups([group]).values()]
        hosts = {m.host for m in description.members if m.assignment.topic_partitions}
        if len(hosts) == workers:
            return
        time.sleep(2)
    raise AssertionError(f"{group}: partitions held by {len(hosts)} hosts, not {workers}")


def test_compose_up_runs_the_example_pipeline_and_every_table_equals_the_oracle(
    stack: ComposeStack, stack_deployment: Deployment
) -> None:
    dep = stack_deployment
    dep.write_entities()
    dep.write_sources(T0, SOURCE_END)
    stack.up()  # the whole file: every service beside the infrastructure, one worker
    stack.wait_healthy(SERVICES)
    wait_converged(stack, dep, last_slot_end(SOURCE_END))
    assert_equals_oracle(dep)
    with urllib.request.urlopen(f"{stack.api_url}/api/v1/models", timeout=30) as response:
        listed = json.dumps(json.load(response))
    assert all(model.id in listed for model in dep.models.incrementals), "the api container serves the models"


def test_three_workers_one_killed_and_one_stopped_mid_task_converge_without_duplicates_or_gaps(
    stack: ComposeStack, stack_deployment: Deployment
) -> None:
    dep = stack_deployment
    stack.up("worker", scale_workers=3)
    stack.wait_healthy(("worker",))
    assert len(stack.container_ids("worker")) == 3
    assert_every_worker_consumes(dep, 3)
    dep.write_sources(SOURCE_END, SECOND_END)
    killed = task_holder(stack, dep, skip=set())
    stack.kill(killed)
    stopped = task_holder(stack, dep, skip={killed})
    stack.stop(stopped)
    assert stack.exited(("worker",)).keys() == {f"worker/{killed}", f"worker/{stopped}"}
    wait_converged(stack, dep, last_slot_end(SECOND_END), gone=frozenset({killed, stopped}))
    assert_equals_oracle(dep)
    for model in dep.healthy_incrementals():
        assert isinstance(model, IncrementalModel)
        covered = dep.coverage(model.id)
        assert len(covered) == 1 and covered[0][1] >= SECOND_END - 2 * model.interval.max, f"{model.id}: {covered}"
