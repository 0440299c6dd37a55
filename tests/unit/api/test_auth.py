"""Bearer tokens: none configured refuses every change (403), a missing or wrong token is 401, a read-only token 403;
readers show a write or read token (header or session cookie); the caller is named by
a fingerprint that never reveals the token."""

from __future__ import annotations

import pytest

from cbt.api.auth import Readers, Refused, authenticate, fingerprint, session_value

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


READ_TOKENS = ["r3ad-only-one"]


def test_a_read_token_cannot_change_anything() -> None:
    with pytest.raises(Refused) as refused:
        authenticate("Bearer r3ad-only-one", TOKENS, READ_TOKENS)
    assert (refused.value.status, refused.value.title) == (403, "Read-only token")
    assert "api.auth.tokens" in refused.value.detail and "r3ad" not in refused.value.detail


@pytest.mark.parametrize(("header", "who"), [
    pytest.param("Bearer s3cret-one", fingerprint("s3cret-one"), id="write-token-reads"),
    pytest.param("Bearer r3ad-only-one", fingerprint("r3ad-only-one"), id="read-token-reads"),
    pytest.param("Bearer r3ad-only-on", None, id="prefix-of-a-token"),
    pytest.param("Basic r3ad-only-one", None, id="other-scheme"),
    pytest.param(None, None, id="no-header"),
])
def test_readers_by_bearer(header: str | None, who: str | None) -> None:
    assert Readers.of(TOKENS, READ_TOKENS).by_bearer(header) == who


def test_a_session_cookie_names_its_token_but_is_not_the_token() -> None:
    readers = Readers.of(TOKENS, READ_TOKENS)
    cookie = session_value("r3ad-only-one")
    assert readers.by_session(cookie) == fingerprint("r3ad-only-one")
    assert "r3ad" not in cookie and readers.by_bearer(f"Bearer {cookie}") is None
    assert readers.by_session("r3ad-only-one") is None and readers.by_session(None) is None
    assert Readers.of(TOKENS, []).by_session(cookie) is None  # the token was removed: its sessions end


def test_reads_need_a_token_only_when_read_tokens_are_configured() -> None:
    assert Readers.of(TOKENS, READ_TOKENS).is_required and not Readers.of(TOKENS, []).is_required
    assert Readers.of(TOKENS, []).by_bearer("Bearer s3cret-two") == fingerprint("s3cret-two")
    assert Readers.of(TOKENS, READ_TOKENS).token_of(" s3cret-two ") == "s3cret-two"
