"""Kafka consumers seen from the services, on the real broker: a process is ready once its consumers joined their
group and alive while their consume loops run; a group's lag is the messages it has not committed yet, read with an
idle consumer of the group (so also while none of its consumers runs), through a broker restart too."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from faststream import AckPolicy
from faststream.confluent import KafkaMessage

from cbt.adapters import kafka_admin
from cbt.adapters.kafka_bus import commit_through, make_broker
from cbt.adapters.kafka_consumers import GroupLag, consume_loops_alive, joined_group
from cbt.config.settings import KafkaConfig
from cbt.dev import stack
from tests.conftest import Endpoints

pytestmark = pytest.mark.integration


async def until(condition: object, timeout_s: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not condition():  # type: ignore[operator]
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.2)


def test_group_membership_liveness_and_lag_follow_the_real_consumer(endpoints: Endpoints) -> None:
    topic = f"probe-test.task-requested.{uuid.uuid4().hex[:8]}"
    kafka_admin.ensure_topics(endpoints.kafka_bootstrap, [topic])
    producer = Producer({"bootstrap.servers": endpoints.kafka_bootstrap})
    for i in range(10):
        producer.produce(topic, f"m{i}".encode(), partition=i % 8)
    assert producer.flush(30) == 0

    async def scenario() -> None:
        received: list[KafkaMessage] = []
        broker = make_broker(KafkaConfig(bootstrap_servers=endpoints.kafka_bootstrap), "probe-test")
        group_lag = GroupLag(endpoints.kafka_bootstrap)
        group = f"probe-test-{uuid.uuid4().hex[:8]}"

        def lag() -> int:
            return group_lag.behind(group, topic)

        assert await asyncio.to_thread(lag) == 10, "a group that never committed is behind by every message"
        subscriber = broker.subscriber(topic, group_id=group,
                                       auto_offset_reset="earliest", ack_policy=AckPolicy.MANUAL,
                                       polling_interval=0.01)

        async def keep(message: KafkaMessage) -> None:
            received.append(message)

        subscriber(keep)
        ready, alive = joined_group([subscriber]), consume_loops_alive([subscriber])
        with pytest.raises(ConnectionError, match="not yet in its consumer group"):
            await ready()
        async with broker:
            await broker.start()
            await until(lambda: len(received) == 10)
            await ready()  # joined: no error
            assert alive() is None
            assert await asyncio.to_thread(lag) == 10, "received is not committed"
            for message in received[:4]:
                await commit_through(message)
            assert await asyncio.to_thread(lag) == 6
            subscriber.tasks[0].cancel()  # the consume loop ends
            await asyncio.sleep(0.1)
            assert alive() == f"consume loop ended: {topic}"
        assert await asyncio.to_thread(lag) == 6, "the group's lag is known with no consumer running"
        group_lag.close()

    try:
        asyncio.run(scenario())
    finally:
        kafka_admin.delete_topics(endpoints.kafka_bootstrap, [topic])


READ_LAG_IN_A_LOOP = """
import sys, time
from cbt.adapters.kafka_consumers import GroupLag
bootstrap, group, topic, seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
lag = GroupLag(bootstrap, timeout_s=2.0)
deadline, failed, read_since = time.monotonic() + seconds, False, 0
while time.monotonic() < deadline and read_since < 50:  # until 50 reads after the broker was back
    try:
        print(lag.behind(group, topic), flush=True)
        read_since += failed
    except Exception as e:  # the broker is away: the reader reports nothing and tries again
        print(type(e).__name__, flush=True)
        failed, read_since = True, 0
    time.sleep(0.02)
lag.close()
"""


def test_reading_a_groups_lag_through_a_broker_restart_never_kills_the_reading_process(endpoints: Endpoints) -> None:
    """For seconds after a broker restart the group coordinator answers "loading": librdkafka's admin offset lookup
    then dereferences a consumer-group handle an admin client does not have, and the process (the coordinator, which
    reads the worker groups' lag) died of SIGSEGV. Read in a loop through a real restart: the reader survives and reads
    the right lag once the broker is back."""
    (kafka,) = [part for part in stack.components() if part.name == "kafka"]
    if kafka.process.pid() is None:
        pytest.skip("Kafka is not started by cbt dev here: it cannot be restarted")
    topic = f"probe-test.task-requested.{uuid.uuid4().hex[:8]}"
    group = f"probe-test-{uuid.uuid4().hex[:8]}"
    kafka_admin.ensure_topics(endpoints.kafka_bootstrap, [topic])
    producer = Producer({"bootstrap.servers": endpoints.kafka_bootstrap})
    for _ in range(20):
        producer.produce(topic, b"m", partition=0)
    assert producer.flush(30) == 0
    del producer  # (its reconnect attempts would only fill the log during the restart)
    committer = Consumer({"bootstrap.servers": endpoints.kafka_bootstrap, "group.id": group})
    committer.commit(offsets=[TopicPartition(topic, 0, 5)], asynchronous=False)  # the group has offsets to load
    committer.close()
    reader = subprocess.Popen([sys.executable, "-c", READ_LAG_IN_A_LOOP, endpoints.kafka_bootstrap, group, topic, "90"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert reader.stdout is not None
        assert reader.stdout.readline().strip() == "15", "the reader reads the lag before the restart"
        kafka.process.stop()
        stack.start([kafka])
        out, _ = reader.communicate(timeout=120)
    finally:
        if reader.poll() is None:
            reader.kill()
        kafka_admin.delete_topics(endpoints.kafka_bootstrap, [topic])
    lines = out.split()
    assert reader.returncode == 0, f"the lag reader died ({_signal_name(reader.returncode)}): {out[-3000:]}"
    assert any(not line.isdigit() for line in lines), "the broker was away for some reads"
    assert lines[-1] == "15", f"after the restart the lag reads right again: {lines[-5:]}"


def _signal_name(returncode: int) -> str:
    return signal.Signals(-returncode).name if returncode < 0 else f"exit {returncode}"
