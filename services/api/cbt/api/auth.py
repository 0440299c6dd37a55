"""Who may read and who may change things: bearer tokens from ``api.auth``, compared in constant time.

``api.auth.tokens`` may change and read; ``api.auth.read_tokens`` may only read. No write token configured means
mutations are disabled (refused with 403 and how to enable them), never open. No read token configured means reads
are open, as they always were; once one is, a reader shows a token — as a bearer header, or, in a browser, as the
session cookie the login page sets (``session_value``), which is good for reads only. A caller is recorded by the
token's fingerprint (a hash prefix), never by the token itself.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from dataclasses import dataclass, field

BEARER = "bearer"
SESSION_COOKIE = "cbt_session"
_SESSION_KEY = b"cbt api read session v1"


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


def session_value(token: str) -> str:
    """The session cookie's value for ``token``: derived from it (an HMAC keyed by the token), so the cookie neither
    holds the token nor works as a bearer token; every replica computes the same, and it ends when the token is
    removed from the config."""
    return hmac.new(token.encode(), _SESSION_KEY, hashlib.sha256).hexdigest()


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
    _sessions: tuple[str, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_sessions", tuple(session_value(token) for token in self.tokens))

    @classmethod
    def of(cls, tokens: Sequence[str], read_tokens: Sequence[str]) -> Readers:
        return cls(tuple(dict.fromkeys([*tokens, *read_tokens])), is_required=bool(read_tokens))

    def by_bearer(self, authorization: str | None) -> str | None:
        """The fingerprint of a configured token in an ``Authorization`` header, else ``None``."""
        offered = _bearer(authorization)
        matched = None if offered is None else _match(offered, self.tokens)
        return None if matched is None else fingerprint(self.tokens[matched])

    def by_session(self, cookie: str | None) -> str | None:
        """The fingerprint of the token whose session cookie this is, else ``None``."""
        matched = None if not cookie else _match(cookie, self._sessions)
        return None if matched is None else fingerprint(self.tokens[matched])

    def token_of(self, offered: str) -> str | None:
        """The configured token equal to ``offered`` (a login form's field), else ``None``."""
        matched = _match(offered.strip(), self.tokens)
        return None if matched is None else self.tokens[matched]
