"""docs/asyncapi.yaml: valid AsyncAPI 3.0 (checked against the official JSON Schema), naming exactly the topics of
``Topics.all()`` and the message kinds of ``cbt.contract.messages``, every ``$ref`` resolving, and its examples and
header schema agreeing with what the services really publish."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft7Validator, Draft202012Validator
from opentelemetry import propagate, trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from cbt.contract.messages import Message
from cbt.contract.schemas import MESSAGES, kind_of, schema_file
from cbt.contract.topics import DEFAULT_POOL, Topics
from tests.unit.contract.asyncapi_spec import SpecUnavailable, asyncapi_3_schema

PROJECT = Path(__file__).resolve().parents[3]
DOCUMENT = PROJECT / "docs" / "asyncapi.yaml"
SERVICES = {"coordinator", "worker", "bounds-cache", "invalidator", "api", "other-systems"}
CLASSES: dict[str, type[Message]] = {kind_of(message): message for message in MESSAGES}


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(DOCUMENT.read_text(encoding="utf-8"))
    return loaded


@pytest.fixture(scope="module")
def official_schema() -> Draft7Validator:
    try:
        return Draft7Validator(asyncapi_3_schema(PROJECT))
    except SpecUnavailable as e:
        pytest.fail(f"the AsyncAPI 3.0.0 JSON Schema could not be fetched: {e}")


def resolve(doc: dict[str, Any], ref: str) -> Any:
    """A ``#/a/b`` or ``file.json[#/a/b]`` reference, relative to the document."""
    location, _, pointer = ref.partition("#")
    target: Any = doc
    if location:
        path = DOCUMENT.parent / location
        assert path.is_file(), f"{ref}: {path} does not exist"
        target = json.loads(path.read_text(encoding="utf-8"))
    for part in filter(None, pointer.split("/")):
        part = part.replace("~1", "/").replace("~0", "~")
        assert isinstance(target, dict) and part in target, f"{ref}: no {part!r}"
        target = target[part]
    return target


def refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node["$ref"]
        for value in node.values():
            yield from refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from refs(value)


def test_is_asyncapi_3(doc: dict[str, Any]) -> None:
    assert doc["asyncapi"] == "3.0.0"


def test_is_valid_against_the_official_asyncapi_3_schema(doc: dict[str, Any],
                                                         official_schema: Draft7Validator) -> None:
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:300]}" for e in official_schema.iter_errors(doc)]
    assert errors == []


@pytest.mark.parametrize("breakage", ["action", "address", "name"])
def test_the_official_schema_catches_a_broken_document(doc: dict[str, Any], official_schema: Draft7Validator,
                                                       breakage: str) -> None:
    broken = copy.deepcopy(doc)
    if breakage == "action":
        broken["operations"]["workerSendsFailures"]["action"] = "publish"  # AsyncAPI 2's verb
    elif breakage == "address":
        broken["channels"]["taskFailed"]["address"] = 42
    else:
        broken["components"]["messages"]["taskFailed"]["name"] = ["task-failed"]
    assert list(official_schema.iter_errors(broken))


@pytest.mark.parametrize("pools", [(DEFAULT_POOL,), (DEFAULT_POOL, "fast", "big-jobs")])
def test_channels_are_exactly_the_topics(doc: dict[str, Any], pools: tuple[str, ...]) -> None:
    addresses: set[str] = set()
    for name, channel in doc["channels"].items():
        placeholders = set(re.findall(r"{(\w+)}", channel["address"]))
        assert placeholders == set(channel.get("parameters", {})), f"{name}: parameters and address differ"
        if placeholders:
            assert placeholders == {"pool"}, f"{name}: only the task topics have a parameter (the pool)"
            assert channel["parameters"]["pool"]["default"] == DEFAULT_POOL
            addresses |= {channel["address"].format(pool=pool) for pool in pools}
        else:
            addresses.add(channel["address"])
    assert addresses == set(Topics().all(pools))


def test_every_message_kind_is_described_once_on_its_own_topic(doc: dict[str, Any]) -> None:
    messages = doc["components"]["messages"]
    assert sorted(m["name"] for m in messages.values()) == sorted(CLASSES)
    for name, channel in doc["channels"].items():
        (message,) = (resolve(doc, m["$ref"]) for m in channel["messages"].values())
        topic = channel["address"].removeprefix(Topics().prefix).removesuffix(".{pool}")
        assert message["name"] == topic, f"channel {name} carries {message['name']}"
        assert message["payload"]["schema"] == {"$ref": f"schemas/{schema_file(topic)}"}
        assert message["headers"] == {"$ref": "#/components/schemas/kafkaHeaders"}
        assert message["bindings"]["kafka"]["key"]["type"] == "string", f"{name}: say what the key is"


def test_every_ref_resolves(doc: dict[str, Any]) -> None:
    found = list(refs(doc))
    assert len(found) > 40
    for ref in found:
        assert resolve(doc, ref) is not None


def test_every_operation_names_its_service_and_every_topic_has_a_sender(doc: dict[str, Any]) -> None:
    senders: dict[str, set[str]] = {}
    for op_id, operation in doc["operations"].items():
        tags = {resolve(doc, tag["$ref"])["name"] for tag in operation["tags"]}
        assert len(tags) == 1 and tags <= SERVICES, f"{op_id}: tags {tags}"
        channel = operation["channel"]["$ref"]
        assert all(m["$ref"].startswith(f"{channel}/messages/") for m in operation["messages"]), op_id
        if operation["action"] == "send":
            senders.setdefault(channel, set()).update(tags)
        else:
            assert operation["action"] == "receive"
            assert "groupId" in operation["bindings"]["kafka"], f"{op_id}: name the consumer group"
    assert set(senders) == {f"#/channels/{name}" for name in doc["channels"]}


def test_examples_are_messages_the_services_accept(doc: dict[str, Any]) -> None:
    headers = Draft7Validator(doc["components"]["schemas"]["kafkaHeaders"])
    seen = set()
    for message in doc["components"]["messages"].values():
        schema = resolve(doc, message["payload"]["schema"]["$ref"])
        for example in message.get("examples", []):
            payload = example["payload"]
            CLASSES[message["name"]].model_validate_json(json.dumps(payload))
            assert list(Draft202012Validator(schema).iter_errors(payload)) == []
            assert list(headers.iter_errors(example.get("headers", {}))) == []
            seen.add(message["name"])
    assert "invalidation" in seen


def test_header_schema_covers_the_trace_context_the_services_send(doc: dict[str, Any]) -> None:
    span = NonRecordingSpan(SpanContext(trace_id=0x4BF92F3577B34DA6A3CE929D0E0E4736, span_id=0x00F067AA0BA902B7,
                                        is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED)))
    sent: dict[str, str] = {"content-type": "application/json"}
    propagate.inject(sent, context=trace.set_span_in_context(span))
    assert "traceparent" in sent
    schema = doc["components"]["schemas"]["kafkaHeaders"]
    assert set(sent) <= set(schema["properties"])
    assert list(Draft7Validator(schema).iter_errors(sent)) == []
    assert list(Draft7Validator(schema).iter_errors({"traceparent": "not-a-trace"}))


def test_the_api_is_listed_as_a_receiver_of_every_topic_it_streams(doc: dict[str, Any]) -> None:
    from cbt.api.events import event_names

    topics = Topics()
    streamed = set(event_names(topics, (DEFAULT_POOL,)))
    listed: set[str] = set()
    for operation in doc["operations"].values():
        names = {resolve(doc, tag["$ref"])["name"] for tag in operation["tags"]}
        if operation["action"] == "receive" and names == {"api"}:
            address = resolve(doc, operation["channel"]["$ref"])["address"]
            listed.add(address.format(pool=DEFAULT_POOL))
    assert listed == streamed
