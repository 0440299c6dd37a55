"""Who may read and who may change things: bearer tokens from ``api.auth``, compared in constant time.

``api.auth.tokens`` may change and read; ``api.auth.read_tokens`` may only read. No write token configured means
mutations are disabled (refused with 403 and how to enable them), never open. No read token configured means reads
are open, as they always were; once one is, a reader shows a token — as a bearer header, or, in a browser, as the
session cookie the login page sets (``new_session``), which is good for reads only, for ``api.auth.session_max_age_s``,
and until its browser signs out (``Revocations``). A caller is recorded by the token's fingerprint (a hash prefix),
never by the token itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import logging
import math
import re
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

log = logging.getLogger("cbt.api.access.auth")

BEARER = "bearer"
SESSION_COOKIE = "cbt_session"
_SESSION_KEY = "cbt api read session v2"


class Refused(Exception):
    """A request refused: ``status`` 401 (no or a wrong token) or 403 (mutations disabled, or a read-only token)."""

    def __init__(self, status: int, title: str, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.title = title
        self.detail = detail


def fingerprint(token: str) -> str:
    """``token:<12 hex digits of its SHA-256>``: names a token in the audit log without revealing it."""
    return "token:" + hashlib.sha256(token.encode()).hexdigest()[:12]


@dataclass(frozen=True)
class Session:
    """A signed-in browser: when it signed in and a nonce naming this sign-in (what signing out revokes)."""

    issued_unix: int
    nonce: str

    def value(self, token: str) -> str:
        """The cookie's value: ``v2.<issued>.<nonce>.<mac>``, the mac an HMAC keyed by the token — so the cookie
        neither holds the token nor works as a bearer token, every replica checks it alike, and it ends when the
        token is removed from the config."""
        return f"v2.{self.issued_unix}.{self.nonce}.{self.mac(token)}"

    def mac(self, token: str) -> str:
        return hmac.new(token.encode(), f"{_SESSION_KEY}|{self.issued_unix}|{self.nonce}".encode(),
                        hashlib.sha256).hexdigest()

    @classmethod
    def parse(cls, value: str | None) -> tuple[Session, str] | None:
        """The session and the mac a cookie value claims; ``None`` when it is not one."""
        parts = (value or "").split(".")
        if len(parts) != 4 or parts[0] != "v2" or not parts[1].isdigit() or len(parts[1]) > 12 \
                or not re.fullmatch(r"[0-9a-f]{32}", parts[2]) or not re.fullmatch(r"[0-9a-f]{64}", parts[3]):
            return None
        return cls(int(parts[1]), parts[2]), parts[3]


def new_session(now_unix: int) -> Session:
    return Session(now_unix, secrets.token_hex(16))


def session_value(token: str, now_unix: int | None = None) -> str:
    """A new session cookie's value for ``token``."""
    return new_session(int(time.time()) if now_unix is None else now_unix).value(token)


def _bearer(authorization: str | None) -> str | None:
    scheme, _, given = (authorization or "").partition(" ")
    return given.strip() if scheme.lower() == BEARER and given.strip() else None


def _match(offered: str, candidates: Sequence[str]) -> int | None:
    """The index of ``offered`` in ``candidates``: every one is compared (no early exit), in constant time."""
    found = None
    for i, candidate in enumerate(candidates):
        if hmac.compare_digest(offered.encode(), candidate.encode()):
            found = i
    return found


def authenticate(authorization: str | None, tokens: Sequence[str], read_tokens: Sequence[str] = ()) -> str:
    """The fingerprint of the write token in an ``Authorization`` header, or ``Refused``: 403 when no write token
    is configured or the header carries a read-only token, 401 when it carries none or an unknown one."""
    if not tokens:
        raise Refused(403, "Mutations disabled",
                      "no token is configured, so changes through the API are disabled: set api.auth.tokens in the "
                      "config (or CBT__API__AUTH__TOKENS='[\"...\"]') and send Authorization: Bearer <token>")
    offered = _bearer(authorization)
    if offered is None:
        raise Refused(401, "Missing bearer token", "send the header Authorization: Bearer <token>")
    matched = _match(offered, tokens)
    if matched is None:
        if _match(offered, read_tokens) is not None:
            raise Refused(403, "Read-only token", "this token may only read (api.auth.read_tokens); changes need "
                          "one of api.auth.tokens")
        raise Refused(401, "Invalid bearer token", "the token is not one of api.auth.tokens")
    return fingerprint(tokens[matched])


@dataclass(frozen=True)
class Readers:
    """Who may read: every write and read token, by bearer header or session cookie."""

    tokens: tuple[str, ...]
    is_required: bool
    """True when ``api.auth.read_tokens`` is set: reads without a token are refused."""
    session_max_age_s: int = 12 * 3600
    revoked: Revocations = field(default_factory=lambda: Revocations(None))

    @classmethod
    def of(cls, tokens: Sequence[str], read_tokens: Sequence[str], session_max_age_s: int = 12 * 3600,
           revoked: Revocations | None = None) -> Readers:
        return cls(tuple(dict.fromkeys([*tokens, *read_tokens])), bool(read_tokens), session_max_age_s,
                   revoked or Revocations(None))

    def by_bearer(self, authorization: str | None) -> str | None:
        """The fingerprint of a configured token in an ``Authorization`` header, else ``None``."""
        offered = _bearer(authorization)
        matched = None if offered is None else _match(offered, self.tokens)
        return None if matched is None else fingerprint(self.tokens[matched])

    def by_session(self, cookie: str | None, now_unix: int | None = None) -> str | None:
        """The fingerprint of the token whose session cookie this is — signed by a configured token, not older than
        ``session_max_age_s``, not signed out — else ``None``."""
        claimed = Session.parse(cookie)
        if claimed is None:
            return None
        session, mac = claimed
        now = int(time.time()) if now_unix is None else now_unix
        if not 0 <= now - session.issued_unix <= self.session_max_age_s or self.revoked.is_revoked(session.nonce):
            return None
        matched = _match(mac, [session.mac(token) for token in self.tokens])
        return None if matched is None else fingerprint(self.tokens[matched])

    def token_of(self, offered: str) -> str | None:
        """The configured token equal to ``offered`` (a login form's field), else ``None``."""
        matched = _match(offered.strip(), self.tokens)
        return None if matched is None else self.tokens[matched]

    def sign_out(self, cookie: str | None) -> None:
        """Revoke the session ``cookie`` names, until it would have expired anyway."""
        claimed = Session.parse(cookie)
        if claimed is not None:
            session, _ = claimed
            self.revoked.revoke(session.nonce, session.issued_unix + self.session_max_age_s)


class RevocationStore(Protocol):
    """Where signed-out sessions are shared between api replicas (Redis: ``cbt.adapters.session_revocations``)."""

    def add(self, nonce: str, until_unix: int) -> None: ...
    def current(self, now_unix: int) -> dict[str, int]:
        """The nonces revoked and not yet expired, with when they expire (forgetting the expired)."""
        ...


class Revocations:
    """Sessions ended by signing out, until they would have expired anyway: in this process at once, in every other
    replica within ``refresh_s`` (each reads the shared store that often, off the event loop; with the store away,
    the revocations it knows stay)."""

    def __init__(self, store: RevocationStore | None, refresh_s: float = 2.0,
                 clock: Callable[[], float] = time.time) -> None:
        self._store = store
        self._refresh_s = refresh_s
        self._clock = clock
        self._known: dict[str, int] = {}
        self._read_at = -math.inf

    def is_revoked(self, nonce: str) -> bool:
        self._refresh_soon()
        return nonce in self._known

    def revoke(self, nonce: str, until_unix: int) -> None:
        self._known[nonce] = until_unix
        if self._store is not None:
            store = self._store
            self._in_background(lambda: store.add(nonce, until_unix))

    def _refresh_soon(self) -> None:
        now = self._clock()
        if self._store is None or now - self._read_at < self._refresh_s:
            return
        self._read_at = now
        store = self._store

        def read() -> None:  # (merged, never replaced: a sign-out meanwhile in this process is kept)
            self._known.update(store.current(int(now)))
            for nonce, until in list(self._known.items()):
                if until < now:
                    self._known.pop(nonce, None)
        self._in_background(read)

    def _in_background(self, call: Callable[[], None]) -> None:
        async def run() -> None:
            try:
                await asyncio.to_thread(call)
            except Exception as e:  # (Redis away: this process's revocations still hold; read again later)
                log.warning("the shared session revocations could not be reached", extra={"error": str(e)[:300]})

        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # (no loop: a test or a tool) — at once
            with contextlib.suppress(Exception):
                call()
            return
        task = loop.create_task(run())
        _BACKGROUND.add(task)
        task.add_done_callback(_BACKGROUND.discard)


_BACKGROUND: set[asyncio.Task[None]] = set()
"""Background reads and writes of the revocations, kept referenced until they end."""
