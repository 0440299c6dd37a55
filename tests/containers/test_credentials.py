"""The compose stack's trust boundary, seen from a client on the host: Redis refuses a client without the user cbt's
password (and one with a wrong one), and serves the services' credentials."""

from __future__ import annotations

import pytest
from redis import Redis
from redis.exceptions import AuthenticationError

from tests.containers.compose import ComposeStack
from tests.containers.conftest import skip_unless_enabled

pytestmark = [pytest.mark.containers, skip_unless_enabled(), pytest.mark.timeout(600)]


def test_redis_refuses_a_client_without_credentials_and_serves_the_services_ones(stack: ComposeStack) -> None:
    port = stack.ports["REDIS"]
    with pytest.raises(AuthenticationError, match="Authentication required"):
        Redis(host="127.0.0.1", port=port).set("cbt:probe", "x")
    with pytest.raises(AuthenticationError):
        Redis(host="127.0.0.1", port=port, username="cbt", password="not-the-password").ping()
    with pytest.raises(AuthenticationError):
        Redis(host="127.0.0.1", port=port, username="default", password="").ping()
    assert Redis.from_url(stack.redis_url).ping()
