"""What a failure says, from its type: the infrastructure is away (transient), it says nothing certain (ambiguous),
or the failing operation's input is at fault (message). The consumers' poison guard (``cbt.service.poison``) retries
the first as long as it lasts, the second for a bounded time, and sets a message failing with the third aside.

The client libraries' error classes are known here, in the adapters, and nowhere above: a library this process never
imported cannot have raised anything, so none is imported to classify.
"""

from __future__ import annotations

import errno
import sys
from typing import Literal

from cbt.base.errors import CbtError, InfraError

FailureClass = Literal["transient", "ambiguous", "message"]

INFRASTRUCTURE_LIBRARIES = frozenset({"redis", "confluent_kafka", "faststream", "pyspark", "grpc", "py4j",
                                      "aiokafka"})
TRANSIENT_ERRNOS = frozenset({errno.ECONNREFUSED, errno.ECONNRESET, errno.ECONNABORTED, errno.ETIMEDOUT,
                              errno.EHOSTUNREACH, errno.ENETUNREACH, errno.ENETDOWN, errno.EPIPE, errno.EAGAIN})
TRANSIENT_GRPC_CODES = frozenset({"UNAVAILABLE", "DEADLINE_EXCEEDED"})
TRANSIENT_REDIS_REPLIES = ("LOADING", "BUSY", "TRYAGAIN", "MASTERDOWN", "CLUSTERDOWN", "READONLY")
"""Redis error replies that say the server cannot answer *now* (loading its data, running a script, failing over)."""
TRANSIENT_KAFKA_CODES = frozenset({"_TRANSPORT", "_ALL_BROKERS_DOWN", "_TIMED_OUT", "_MSG_TIMED_OUT",
                                   "REQUEST_TIMED_OUT", "NOT_LEADER_FOR_PARTITION", "NOT_COORDINATOR",
                                   "COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS",
                                   "LEADER_NOT_AVAILABLE", "NETWORK_EXCEPTION", "_RESOLVE"})


def classify(error: BaseException) -> FailureClass:
    """Whether ``error`` says the infrastructure is away (transient), says nothing certain (ambiguous), or is the
    message's failure."""
    cause = error.__cause__
    if isinstance(error, CbtError) and cause is not None:
        return classify(cause)
    if isinstance(error, InfraError | TimeoutError | ConnectionError):
        return "transient"
    if isinstance(error, OSError):
        return "transient" if error.errno is None or error.errno in TRANSIENT_ERRNOS else "message"
    if _is_a(error, "grpc", "RpcError"):
        return _grpc(error)
    if _is_a(error, "confluent_kafka", "KafkaException"):
        return _kafka(error)
    library = type(error).__module__.split(".")[0]
    if library == "redis":
        return _redis(error)
    if library == "pyspark":
        return _spark(error)
    return "ambiguous" if library in INFRASTRUCTURE_LIBRARIES else "message"


def _is_a(error: BaseException, module: str, name: str) -> bool:
    """``isinstance`` against a library's class, without importing a library this process never loaded (then
    nothing it raised can be here)."""
    loaded = sys.modules.get(module)
    cls = getattr(loaded, name, None)
    return isinstance(cls, type) and isinstance(error, cls)


def _redis(error: BaseException) -> FailureClass:
    from redis import exceptions as redis_errors

    if isinstance(error, redis_errors.ConnectionError | redis_errors.TimeoutError | redis_errors.BusyLoadingError):
        return "transient"
    if isinstance(error, redis_errors.ResponseError):
        return "transient" if str(error).startswith(TRANSIENT_REDIS_REPLIES) else "message"
    if isinstance(error, redis_errors.DataError | redis_errors.AuthenticationError | redis_errors.NoScriptError):
        return "message"
    return "ambiguous"


def _grpc(error: BaseException) -> FailureClass:
    code = getattr(error, "code", None)
    try:
        name = code().name if callable(code) else ""
    except Exception:  # (an RpcError that is not a Call has no code)
        name = ""
    return "transient" if name in TRANSIENT_GRPC_CODES else "ambiguous"


def _spark(error: BaseException) -> FailureClass:
    from pyspark.errors import exceptions as spark_errors
    from pyspark.errors.exceptions import connect as spark_connect

    deterministic = (spark_errors.base.AnalysisException, spark_errors.base.IllegalArgumentException,
                     spark_errors.base.ArithmeticException, spark_errors.base.DateTimeException,
                     spark_errors.base.UnsupportedOperationException, spark_errors.base.PySparkValueError,
                     spark_errors.base.PySparkTypeError, spark_connect.InvalidPlanInput)
    if isinstance(error, deterministic):
        return "message"
    if isinstance(error, spark_errors.base.RetriesExceeded):
        return "transient"  # (the client's own retries of UNAVAILABLE ran out: the server is away)
    if any(f"StatusCode.{code}" in str(error) for code in TRANSIENT_GRPC_CODES):
        return "transient"  # (a gRPC failure with no rich status: Spark Connect's message names the code)
    return "ambiguous"


def _kafka(error: BaseException) -> FailureClass:
    from confluent_kafka import KafkaError

    kafka_error = error.args[0] if error.args else None
    if not isinstance(kafka_error, KafkaError):
        return "ambiguous"
    if kafka_error.name() in TRANSIENT_KAFKA_CODES or kafka_error.retriable():
        return "transient"
    return "message" if kafka_error.fatal() else "ambiguous"


