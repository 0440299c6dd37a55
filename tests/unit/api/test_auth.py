"""Bearer tokens: none configured refuses every change (403), a missing or wrong token is 401, the caller is named by
a fingerprint that never reveals the token."""

from __future__ import annotations

import pytest

from cbt.api.auth import Refused, authenticate, fingerprint

TOKENS = ["s3cret-one", "s3cret-two"]


@pytest.mark.parametrize(("header", "tokens", "status"), [
    pytest.param("Bearer s3cret-one", [], 403, id="no-token-configured-disables-changes"),
    pytest.param(None, [], 403, id="no-token-configured-even-without-header"),
    pytest.param(None, TOKENS, 401, id="missing-header"),
    pytest.param("Basic s3cret-one", TOKENS, 401, id="other-scheme"),
    pytest.param("Bearer ", TOKENS, 401, id="empty-token"),
    pytest.param("Bearer s3cret-three", TOKENS, 401, id="wrong-token"),
    pytest.param("Bearer s3cret-on", TOKENS, 401, id="prefix-of-a-token"),
])
def test_refused(header: str | None, tokens: list[str], status: int) -> None:
    with pytest.raises(Refused) as refused:
        authenticate(header, tokens)
    assert refused.value.status == status
    assert "s3cret" not in refused.value.detail


@pytest.mark.parametrize("header", ["Bearer s3cret-two", "bearer s3cret-two", "Bearer  s3cret-two "])
def test_accepted_as_the_tokens_fingerprint(header: str) -> None:
    who = authenticate(header, TOKENS)
    assert who == fingerprint("s3cret-two") != fingerprint("s3cret-one")
    assert who.startswith("token:") and "s3cret" not in who


def test_a_refusal_can_travel_as_an_exception() -> None:
    """Raised through frames (the web framework sets its traceback): it must stay a plain, mutable exception."""
    try:
        authenticate(None, TOKENS)
    except Refused as e:
        e.__traceback__ = None
        assert (e.status, str(e)) == (401, e.detail)
