"""Poison messages (``cbt.service.poison``): a message whose handling keeps failing is set aside after the configured
attempts, with backoff between them, and its stream goes on; failures of the infrastructure are retried for as long
as they last and never set a message aside."""

from __future__ import annotations

import asyncio
import errno

import grpc
import pytest
from confluent_kafka import KafkaError, KafkaException
from pyspark.errors import AnalysisException, ParseException, RetriesExceeded
from pyspark.errors.exceptions.connect import SparkConnectGrpcException
from redis.exceptions import BusyLoadingError, DataError, ResponseError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from cbt.adapters.delta_admin import AdminTableError
from cbt.base.errors import InfraError
from cbt.service.poison import PoisonGuard, classify, is_transient


class Handler:
    def __init__(self, error: Exception | None) -> None:
        self.error, self.calls = error, 0

    async def __call__(self) -> None:
        self.calls += 1
        if self.error is not None:
            raise self.error


def deliver(guard: PoisonGuard, handler: Handler, times: int) -> list[tuple[bytes, str]]:
    """Deliver one message ``times`` times, as a consumer does after each raise; what was set aside."""
    aside: list[tuple[bytes, str]] = []

    async def set_aside(body: bytes, reason: str) -> None:
        aside.append((body, reason))

    async def scenario() -> None:
        for _ in range(times):
            try:
                await guard.handle(("t", 0, 7), b"body", handler, set_aside)
            except Exception:
                continue
            break

    asyncio.run(scenario())
    return aside


def test_a_message_that_keeps_failing_is_set_aside_at_its_last_attempt_with_the_reason() -> None:
    guard, handler = PoisonGuard("coordinator", max_attempts=3, backoff_initial_s=0), Handler(KeyError("x"))
    aside = deliver(guard, handler, times=10)
    assert handler.calls == 3 and len(aside) == 1
    body, reason = aside[0]
    assert body == b"body" and reason.startswith("coordinator: handling failed 3 times (the last: KeyError: 'x')")
    assert guard.failures == {} and guard.outages == {}, "nothing kept for a message set aside"


@pytest.mark.parametrize("error", [
    RedisConnectionError("Connection refused"), InfraError("kafka down"), TimeoutError(),
    AdminTableError("record invalidation failed"),
])
def test_infrastructure_failures_are_retried_and_never_set_a_message_aside(error: Exception) -> None:
    if isinstance(error, AdminTableError):
        error.__cause__ = ConnectionRefusedError("spark connect restarting")
    guard, handler = PoisonGuard("invalidator", max_attempts=2, backoff_initial_s=0), Handler(error)
    assert deliver(guard, handler, times=12) == [] and handler.calls == 12


def test_a_handled_message_leaves_nothing_behind() -> None:
    guard = PoisonGuard("worker", max_attempts=3, backoff_initial_s=0)
    assert deliver(guard, Handler(ValueError("once")), times=1) == []
    assert guard.failures == {("t", 0, 7): 1}
    assert deliver(guard, Handler(None), times=1) == [] and guard.failures == {}


def test_what_counts_as_the_infrastructures_failure() -> None:
    assert is_transient(RedisConnectionError()) and is_transient(OSError()) and is_transient(InfraError("x"))
    caused = AdminTableError("read failures failed")
    caused.__cause__ = RedisConnectionError()
    assert is_transient(caused)
    assert not is_transient(AdminTableError("no cause")) and not is_transient(ValueError("bad"))


class _Call(grpc.RpcError):
    def __init__(self, code: grpc.StatusCode) -> None:
        self._code = code

    def code(self) -> grpc.StatusCode:
        return self._code


def _kafka(code: int) -> KafkaException:
    return KafkaException(KafkaError(code))


@pytest.mark.parametrize(("error", "expected"), [
    pytest.param(RedisConnectionError("Connection refused"), "transient", id="redis-connection"),
    pytest.param(RedisTimeoutError(), "transient", id="redis-timeout"),
    pytest.param(BusyLoadingError("LOADING Redis is loading the dataset in memory"), "transient", id="redis-loading"),
    pytest.param(ResponseError("BUSY Redis is busy running a script"), "transient", id="redis-busy-script"),
    pytest.param(ResponseError("ERR Error running script: user_script:12: bad argument"), "message",
                 id="redis-script-error"),
    pytest.param(DataError("Invalid input of type: 'dict'"), "message", id="redis-data-error"),
    pytest.param(_Call(grpc.StatusCode.UNAVAILABLE), "transient", id="grpc-unavailable"),
    pytest.param(_Call(grpc.StatusCode.DEADLINE_EXCEEDED), "transient", id="grpc-deadline"),
    pytest.param(_Call(grpc.StatusCode.INVALID_ARGUMENT), "ambiguous", id="grpc-other"),
    pytest.param(AnalysisException("[TABLE_OR_VIEW_NOT_FOUND] x"), "message", id="spark-analysis"),
    pytest.param(ParseException("[PARSE_SYNTAX_ERROR] near FROM"), "message", id="spark-parse"),
    pytest.param(RetriesExceeded(errorClass="RETRIES_EXCEEDED", messageParameters={}), "transient",
                 id="spark-retries-exceeded"),
    pytest.param(SparkConnectGrpcException("<_MultiThreadedRendezvous of RPC that terminated with: status = "
                                           "StatusCode.UNAVAILABLE details = \"failed to connect\">"), "transient",
                 id="spark-grpc-unavailable"),
    pytest.param(SparkConnectGrpcException("something went wrong"), "ambiguous", id="spark-bare"),
    pytest.param(_kafka(KafkaError._TRANSPORT), "transient", id="kafka-transport"),
    pytest.param(_kafka(KafkaError._ALL_BROKERS_DOWN), "transient", id="kafka-brokers-down"),
    pytest.param(_kafka(KafkaError.TOPIC_AUTHORIZATION_FAILED), "ambiguous", id="kafka-authorization"),
    pytest.param(ConnectionRefusedError(), "transient", id="connection-refused"),
    pytest.param(OSError(errno.ECONNRESET, "reset"), "transient", id="os-reset"),
    pytest.param(FileNotFoundError(errno.ENOENT, "no such file"), "message", id="os-not-found"),
    pytest.param(KeyError("x"), "message", id="our-own-bug"),
])
def test_a_failure_is_classified_by_its_type_not_by_the_library_that_raised_it(
        error: Exception, expected: str) -> None:
    assert classify(error) == expected


@pytest.mark.parametrize("error", [
    ResponseError("ERR Error running script: attempt to compare nil with number"), DataError("bad value"),
    AnalysisException("[UNRESOLVED_COLUMN] x"),
])
def test_a_deterministic_library_error_sets_the_message_aside_after_its_attempts(error: Exception) -> None:
    """Before, every error of the Redis, Spark or Kafka clients counted as an outage and was retried forever: a
    script's error or an AnalysisException stalled its partition for good."""
    guard, handler = PoisonGuard("coordinator", max_attempts=3, backoff_initial_s=0), Handler(error)
    aside = deliver(guard, handler, times=10)
    assert handler.calls == 3 and len(aside) == 1 and "handling failed 3 times" in aside[0][1]


def test_an_ambiguous_error_holds_a_message_for_at_most_its_cap_then_it_is_set_aside() -> None:
    now = [0.0]
    guard = PoisonGuard("worker", max_attempts=2, backoff_initial_s=0, ambiguous_max_s=600, clock=lambda: now[0])
    handler = Handler(SparkConnectGrpcException("something went wrong"))

    def advancing() -> Handler:
        async def call() -> None:
            now[0] += 100
            await handler()
        return call  # type: ignore[return-value]

    aside = deliver(guard, advancing(), times=20)
    assert handler.calls == 7, "retried past max_attempts (it may be the infrastructure) until 600 s had passed"
    assert len(aside) == 1 and "held it for 600 s" in aside[0][1]
    assert guard.ambiguous_since == {} and guard.outages == {}
