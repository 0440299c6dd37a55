"""Who may change things: a bearer token from ``api.auth.tokens``, compared in constant time.

No token configured means mutations are disabled (refused with 403 and how to enable them), never open. A caller
is recorded by the token's fingerprint (a hash prefix), never by the token itself.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence

BEARER = "bearer"


class Refused(Exception):
    """A mutation refused: ``status`` 401 (no or a wrong token) or 403 (mutations disabled)."""

    def __init__(self, status: int, title: str, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.title = title
        self.detail = detail


def fingerprint(token: str) -> str:
    """``token:<12 hex digits of its SHA-256>``: names a token in the audit log without revealing it."""
    return "token:" + hashlib.sha256(token.encode()).hexdigest()[:12]


def authenticate(authorization: str | None, tokens: Sequence[str]) -> str:
    """The caller's fingerprint for an ``Authorization`` header, or ``Refused``. Every configured token is compared
    (no early exit), each with ``hmac.compare_digest``."""
    if not tokens:
        raise Refused(403, "Mutations disabled",
                      "no token is configured, so changes through the API are disabled: set api.auth.tokens in the "
                      "config (or CBT__API__AUTH__TOKENS='[\"...\"]') and send Authorization: Bearer <token>")
    scheme, _, given = (authorization or "").partition(" ")
    if scheme.lower() != BEARER or not given.strip():
        raise Refused(401, "Missing bearer token", "send the header Authorization: Bearer <token>")
    offered = given.strip().encode()
    matched: str | None = None
    for token in tokens:
        if hmac.compare_digest(offered, token.encode()):
            matched = token
    if matched is None:
        raise Refused(401, "Invalid bearer token", "the token is not one of api.auth.tokens")
    return fingerprint(matched)
