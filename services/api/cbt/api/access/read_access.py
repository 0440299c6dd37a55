"""Reads behind a token, when ``api.auth.read_tokens`` is set: the ``ReadAccess`` middleware and the login form.

Every request to the api process then needs a configured token (read or write), except the login form itself
(``/login``, ``/logout``) and the static assets (``/ui/static``: code and styles, no data). Probes and metrics are
not here: they answer on ``health_addr`` and ``metrics_addr``, open as before.

- Scripts send ``Authorization: Bearer <token>`` — every route, including the event stream and the OpenAPI document.
- A browser signs in once at ``/login``: the form's token becomes a session cookie (``auth.Session``: signed with
  the token, ``HttpOnly``, ``SameSite=Lax``, ``Secure`` over HTTPS, for ``api.auth.session_max_age_s``; signing out
  at ``/logout`` revokes it on every replica) that the pages, their ``fetch`` calls, ``EventSource`` and ``/docs``
  send by themselves. The cookie is good for GET and HEAD only: a change still needs
  the bearer header with a write token, so another site cannot make a signed-in browser change anything.

Without a token: ``/api/...`` answers 401 (a problem); a page or ``/docs`` redirects to ``/login?next=<page>``.
"""

from __future__ import annotations

import urllib.parse
from typing import TYPE_CHECKING

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.requests import cookie_parser

from cbt.api.access.auth import SESSION_COOKIE, Readers, Revocations, RevocationStore, session_value
from cbt.api.access.limits import App, Receive, Scope, Send, address_of
from cbt.api.problems import problem_response
from cbt.api.ui.shells import STATIC_PATH, render_login

if TYPE_CHECKING:
    from fastapi import FastAPI

    from cbt.config.settings import ApiAuth

LOGIN_PATH = "/login"
LOGOUT_PATH = "/logout"
OPEN_PATHS = frozenset({LOGIN_PATH, LOGOUT_PATH})
SAFE_METHODS = frozenset({"GET", "HEAD"})
API_PATHS = ("/api/", "/cbt/api/")
"""Paths answered for programs: refused with 401 and a problem body, where a page redirects to the login form."""


def reader_of(scope: Scope, readers: Readers) -> str | None:
    """The fingerprint of the configured token this request shows: a bearer header, or for GET/HEAD the session
    cookie; ``None`` when it shows none."""
    headers = dict(scope.get("headers") or [])
    authorization = headers.get(b"authorization", b"").decode("latin-1")
    who = readers.by_bearer(authorization)
    if who is None and scope.get("method") in SAFE_METHODS:
        cookie = headers.get(b"cookie", b"").decode("latin-1")
        who = readers.by_session(cookie_parser(cookie).get(SESSION_COOKIE))
    return who


def client_key(readers: Readers, scope: Scope) -> str:
    """Who a request counts against: its token's fingerprint when it shows a configured one, else its address (a
    made-up token does not buy a fresh allowance)."""
    return reader_of(scope, readers) or address_of(scope)


def is_open(path: str) -> bool:
    return path in OPEN_PATHS or path.startswith(STATIC_PATH + "/")


def local_path(next_path: str | None) -> str:
    """Where to go after signing in: a path on this server, never another site (``//host``, ``/\\host``)."""
    if not next_path or not next_path.startswith("/") or next_path.startswith(("//", "/\\")):
        return "/"
    return next_path


class ReadAccess:
    """Refuses a request that shows no configured token, when reads need one (``Readers.is_required``)."""

    def __init__(self, app: App, *, readers: Readers) -> None:
        self.app = app
        self.readers = readers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if (scope["type"] != "http" or not self.readers.is_required or is_open(path)
                or reader_of(scope, self.readers) is not None):
            await self.app(scope, receive, send)
            return
        refusal: Response
        if path.startswith(API_PATHS) or scope.get("method") not in SAFE_METHODS:
            refusal = problem_response(401, "Token required", "this api needs a token to read: send Authorization: "
                                       "Bearer <token> with one of api.auth.read_tokens or api.auth.tokens",
                                       "unauthorized")
        else:
            query = scope.get("query_string", b"").decode("latin-1")
            target = path + (f"?{query}" if query else "")
            refusal = RedirectResponse(f"{LOGIN_PATH}?{urllib.parse.urlencode({'next': target})}", status_code=303)
        await refusal(scope, receive, send)


def login_router(readers: Readers) -> APIRouter:
    router = APIRouter(include_in_schema=False)

    @router.get(LOGIN_PATH)
    def login_form(next: str = "/") -> Response:
        if not readers.is_required:
            return RedirectResponse(local_path(next), status_code=303)
        return HTMLResponse(render_login(local_path(next)))

    @router.post(LOGIN_PATH)
    async def login(request: Request) -> Response:
        form = urllib.parse.parse_qs((await request.body()).decode("utf-8", "replace"))
        next_path = local_path(form.get("next", ["/"])[0])
        token = readers.token_of(form.get("token", [""])[0])
        if token is None:
            return HTMLResponse(render_login(next_path, "That token is not one of the configured tokens."),
                                status_code=401)
        signed_in = RedirectResponse(next_path, status_code=303)
        # Secure whenever the browser reached us over HTTPS — through a proxy listed in api.forwarded_allow_ips
        # too (uvicorn takes the scheme from its X-Forwarded-Proto) — and gone when the session expires.
        signed_in.set_cookie(SESSION_COOKIE, session_value(token), httponly=True, samesite="lax", path="/",
                             secure=request.url.scheme == "https", max_age=readers.session_max_age_s)
        return signed_in

    @router.post(LOGOUT_PATH)
    def logout(request: Request) -> Response:
        readers.sign_out(request.cookies.get(SESSION_COOKIE))  # (the cookie stops working everywhere, not only here)
        signed_out = RedirectResponse(LOGIN_PATH, status_code=303)
        signed_out.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="lax")
        return signed_out

    return router


def install_access(app: FastAPI, auth: ApiAuth, revocations: RevocationStore | None = None) -> Readers:
    """Add ``ReadAccess`` and the login routes to ``app``; the ``Readers`` also name clients for the rate limit.
    Call before adding the CORS middleware, so that a preflight is answered without a token."""
    readers = Readers.of(auth.tokens, auth.read_tokens, auth.session_max_age_s, Revocations(revocations))
    app.add_middleware(ReadAccess, readers=readers)
    app.include_router(login_router(readers))
    return readers
