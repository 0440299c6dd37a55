"""The event stream's plumbing: which topics become which events, what is dropped, and fan-out to every stream with
a bounded queue (a slow client loses its oldest events, never slows the consumer)."""

from __future__ import annotations

import asyncio

import pytest

from cbt.api.events import EventHub, decode_event, event_names
from cbt.contract.topics import Topics

NAMES = event_names(Topics("p."), ("default", "python"))


@pytest.mark.parametrize(("topic", "body", "expected"), [
    pytest.param("p.interval-completed", b'{"model": "a.b", "task_id": "t"}', ("interval-completed", "a.b"),
                 id="completion"),
    pytest.param("p.task-requested.python", b'{"model": "a.b"}', ("task-requested", "a.b"), id="any-pool"),
    pytest.param("p.bounds-updated", b'{"model": "s.t", "min": 1}', ("bounds-updated", "s.t"), id="bounds"),
    pytest.param("p.invalidation-rejected", b'{"model": "a.b"}', None, id="topic-not-streamed"),
    pytest.param("p.invalidation", b"not json", None, id="not-json"),
    pytest.param("p.invalidation", b'["a"]', None, id="not-an-object"),
    pytest.param("p.task-failed", b'{"task_id": "t"}', None, id="no-model"),
])
def test_decode(topic: str, body: bytes, expected: tuple[str, str] | None) -> None:
    event = decode_event(NAMES, topic, body)
    assert (None if event is None else (event[0], event[1]["model"])) == expected


def test_every_stream_gets_every_event_and_a_full_queue_drops_its_oldest() -> None:
    async def scenario() -> tuple[list[int], list[int], int]:
        hub = EventHub(queue_size=2)
        with hub.subscribe() as slow, hub.subscribe() as fast:
            got_fast = []
            for n in range(3):
                hub.publish(("interval-completed", {"model": "a.b", "n": n}))
                event = fast.get_nowait()
                assert event is not None
                got_fast.append(event[1]["n"])
            got_slow = [e[1]["n"] for e in (slow.get_nowait(), slow.get_nowait()) if e is not None]
            hub.close()
            assert await asyncio.wait_for(fast.get(), 1) is None, "closing ends every stream"
        return got_fast, got_slow, hub.streams

    fast, slow, left = asyncio.run(scenario())
    assert (fast, slow, left) == ([0, 1, 2], [1, 2], 0)


def test_a_stream_ends_after_its_lifetime_and_tells_the_browser_to_reconnect() -> None:
    """``api.max_event_stream_s``: before, a stream was held open for good (64 of them held every stream slot)."""
    from cbt.api.context import ApiContext
    from cbt.api.offline import Offline
    from cbt.api.web import create_app
    from cbt.config.settings import Config
    from cbt.models.dag import ModelSet
    from tests.unit.api.asgi import request

    hub = EventHub()
    app = create_app(ApiContext(config=Config.model_validate({"api": {"max_event_stream_s": 1}}), models=ModelSet({}),
                                hot=Offline(), refresh=Offline(), admin=Offline(), commands=Offline(), events=hub))

    async def scenario() -> tuple[int, str]:
        answer = await asyncio.wait_for(request(app, "GET", "/api/v1/events"), timeout=10)
        return answer.status, answer.body.decode()

    status, body = asyncio.run(scenario())
    assert status == 200 and body.startswith(": connected") and "retry: 1000" in body
    assert "stream lifetime reached" in body and hub.streams == 0
