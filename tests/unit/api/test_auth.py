"""Bearer tokens: none configured refuses every change (403), a missing or wrong token is 401, a read-only token 403;
readers show a write or read token (header or session cookie); the caller is named by
a fingerprint that never reveals the token."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from cbt.api.access.auth import Readers, Refused, Revocations, authenticate, fingerprint, session_value

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
    with pytest.raises(Refused) as raised:
        authenticate(None, TOKENS)
    refused = raised.value
    refused.__traceback__ = None
    assert (refused.status, str(refused)) == (401, refused.detail)


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
    assert session_value("r3ad-only-one") != cookie, "each sign-in is a session of its own"


def test_a_session_expires() -> None:
    """Before, a session cookie was the token's HMAC alone: valid for as long as the token, whoever copied it."""
    readers = Readers.of(TOKENS, READ_TOKENS, session_max_age_s=3600)
    cookie = session_value("s3cret-two", now_unix=1_700_000_000)
    assert readers.by_session(cookie, now_unix=1_700_003_600) == fingerprint("s3cret-two")
    assert readers.by_session(cookie, now_unix=1_700_003_601) is None
    assert readers.by_session(cookie, now_unix=1_699_999_000) is None  # (issued in the future: forged or skewed)


@pytest.mark.parametrize("change", [
    pytest.param(lambda c: c.replace(".1700000000.", ".1800000000.", 1), id="a-later-sign-in-time"),
    pytest.param(lambda c: c[:-1] + ("0" if c[-1] != "0" else "1"), id="another-mac"),
    pytest.param(lambda c: c.replace("v2.", "v1.", 1), id="another-version"),
    pytest.param(lambda c: c + ".x", id="extra-part"),
])
def test_an_altered_session_cookie_is_refused(change: Callable[[str], str]) -> None:
    readers = Readers.of(TOKENS, READ_TOKENS, session_max_age_s=10**9)
    cookie = session_value("s3cret-two", now_unix=1_700_000_000)
    assert readers.by_session(change(cookie), now_unix=1_700_000_001) is None


class SharedStore:
    """The revocations' store as Redis keeps it, in memory (the Redis adapter: tests/integration)."""

    def __init__(self) -> None:
        self.revoked: dict[str, int] = {}

    def add(self, nonce: str, until_unix: int) -> None:
        self.revoked[nonce] = until_unix

    def current(self, now_unix: int) -> dict[str, int]:
        self.revoked = {n: u for n, u in self.revoked.items() if u >= now_unix}
        return dict(self.revoked)


def test_signing_out_ends_the_session_here_at_once_and_on_another_replica_at_its_next_read() -> None:
    store, now = SharedStore(), [1_700_000_000.0]
    here = Readers.of(TOKENS, READ_TOKENS, 3600, Revocations(store, refresh_s=2, clock=lambda: now[0]))
    there = Readers.of(TOKENS, READ_TOKENS, 3600, Revocations(store, refresh_s=2, clock=lambda: now[0]))
    cookie = session_value("s3cret-two", now_unix=1_700_000_000)
    assert here.by_session(cookie, 1_700_000_001) and there.by_session(cookie, 1_700_000_001)
    here.sign_out(cookie)
    assert here.by_session(cookie, 1_700_000_001) is None
    assert list(store.revoked.values()) == [1_700_003_600], "kept until the session would have expired"
    now[0] += 2
    assert there.by_session(cookie, 1_700_000_002) is None
    assert there.by_session(session_value("s3cret-two", 1_700_000_002), 1_700_000_002), "a new sign-in works"


def test_reads_need_a_token_only_when_read_tokens_are_configured() -> None:
    assert Readers.of(TOKENS, READ_TOKENS).is_required and not Readers.of(TOKENS, []).is_required
    assert Readers.of(TOKENS, []).by_bearer("Bearer s3cret-two") == fingerprint("s3cret-two")
    assert Readers.of(TOKENS, READ_TOKENS).token_of(" s3cret-two ") == "s3cret-two"
