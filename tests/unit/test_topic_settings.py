"""Topic creation settings: task topic partitions and replication factor come from config (defaults unchanged)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cbt.adapters.kafka_admin import TASK_TOPIC_PARTITIONS, partitions_for, topic_config
from cbt.config.settings import ConfigProblems, load_config


def test_defaults_keep_eight_task_partitions_and_one_replica(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("")
    kafka = load_config(tmp_path / "config.yaml", {}).kafka
    assert (kafka.task_topic_partitions, kafka.replication_factor) == (TASK_TOPIC_PARTITIONS, 1) == (8, 1)


def test_file_and_environment_set_them(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("kafka: {task_topic_partitions: 12, replication_factor: 2}\n")
    kafka = load_config(tmp_path / "config.yaml", {"CBT__KAFKA__REPLICATION_FACTOR": "3"}).kafka
    assert (kafka.task_topic_partitions, kafka.replication_factor) == (12, 3)


@pytest.mark.parametrize("key", ["task_topic_partitions", "replication_factor"])
def test_zero_is_a_problem_naming_the_key(tmp_path: Path, key: str) -> None:
    (tmp_path / "config.yaml").write_text(f"kafka:\n  {key}: 0\n")
    with pytest.raises(ConfigProblems, match=rf"config.yaml:2: kafka.{key}: .*greater than or equal to 1"):
        load_config(tmp_path / "config.yaml", {})


@pytest.mark.parametrize(
    ("topic", "expected"),
    [
        pytest.param("cbt.task-requested.default", 5, id="task-topic"),
        pytest.param("task-requested.python", 5, id="task-topic-no-prefix"),
        pytest.param("cbt.interval-completed", 1, id="other-topic"),
        pytest.param("cbt.task-requested-not.x", 1, id="look-alike"),
    ],
)
def test_only_task_topics_get_the_task_partitions(topic: str, expected: int) -> None:
    assert partitions_for(topic, 5) == expected


def test_replicated_topics_need_two_in_sync_replicas_for_a_write() -> None:
    assert topic_config(1) == {}
    assert topic_config(2) == topic_config(3) == {"min.insync.replicas": "2"}
