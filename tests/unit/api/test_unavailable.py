"""A store that does not answer is a 503 whose body says which kind of store and that the request may be repeated —
never the error's own text (host names, credentials in a URL, SQL), which goes to the api's log instead."""

from __future__ import annotations

import asyncio
import logging

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from cbt.adapters.delta_admin import AdminTableError
from cbt.api.common import blocking
from cbt.api.problems import Unavailable


@pytest.mark.parametrize(("error", "store"), [
    (RedisConnectionError("Error 111 connecting to redis-master.prod.internal:6379. Connection refused."), "Redis"),
    (AdminTableError("read failures failed: [TABLE_OR_VIEW_NOT_FOUND] `admin`.`cbt_failures` at s3a://bucket/x"),
     "the admin tables"),
])
def test_a_store_that_does_not_answer_is_a_generic_503_and_the_reason_is_logged(
        error: Exception, store: str, caplog: pytest.LogCaptureFixture) -> None:
    def failing() -> None:
        raise error

    with caplog.at_level(logging.WARNING, logger="cbt.api"), pytest.raises(Unavailable) as info:
        asyncio.run(blocking(failing))
    assert info.value.status == 503
    assert info.value.detail == f"{store} did not answer; the request may be repeated (the api's log has the reason)"
    assert str(error)[:40] in caplog.records[-1].__dict__["error"]
