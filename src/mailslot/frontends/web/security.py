"""Who may use the page, and what every response carries (docs/web.md, "Security").

One ASGI layer in front of every route, so no route can forget a check:

* ``Host`` must name the loopback address and port the page listens on (a DNS
  rebinding page at ``evil.example`` resolving to 127.0.0.1 is refused);
* a session cookie, given once in exchange for the one-time token ``mailslot web``
  printed (``HttpOnly``, ``SameSite=Strict``), is needed for everything but the
  exchange itself and the stylesheet and script;
* a change (``POST``) must come from the page itself (``Origin``, when the browser
  sends one) and carry the session's CSRF token (checked where the form is read:
  :meth:`Sessions.check_csrf`); other methods are refused;
* a request body is at most :data:`MAX_BODY` bytes;
* every response says: this strict Content-Security-Policy (no inline script, nothing
  from the network), no framing, no sniffing, no referrer beyond the page, no caching,
  no CORS.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import SimpleCookie
from typing import Any

from ...core.text import DEFAULT_MAX_BODY_BYTES

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

COOKIE = "mailslot_session"
MAX_BODY = 3 * DEFAULT_MAX_BODY_BYTES + 16 * 1024
"""Room for one form-encoded body of the default largest size (a byte may take three
characters) and the form's other fields; the service still applies the real limit."""
PUBLIC = ("/login", "/favicon.ico")
"""Paths that need no session (besides everything under ``/static/``)."""
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
       "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),  # "no-referrer" would make a form's Origin "null"
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
]


class Sessions:
    """The one-time login token and the sessions it was exchanged for (in memory: they
    end when ``mailslot web`` stops)."""

    def __init__(self) -> None:
        self.token: str | None = secrets.token_urlsafe(32)
        self._csrf: dict[str, str] = {}

    def exchange(self, token: str) -> str | None:
        """A new session id for the one-time token, or ``None`` (wrong or used)."""
        if self.token is None or not hmac.compare_digest(token.encode(), self.token.encode()):
            return None
        self.token = None
        session = secrets.token_urlsafe(32)
        self._csrf[session] = secrets.token_urlsafe(32)
        return session

    def csrf(self, session: str | None) -> str | None:
        """The CSRF token of a valid session, or ``None``."""
        if not session:
            return None
        for known, token in self._csrf.items():
            if hmac.compare_digest(known.encode(), session.encode()):
                return token
        return None

    def check_csrf(self, session: str | None, given: str) -> bool:
        expected = self.csrf(session)
        return expected is not None and hmac.compare_digest(expected.encode(), given.encode())


def session_of(scope: Scope) -> str | None:
    """The session cookie's value, if the request has one."""
    for name, value in scope.get("headers", []):
        if name == b"cookie":
            cookie: SimpleCookie = SimpleCookie()
            try:
                cookie.load(value.decode("latin-1"))
            except Exception:  # a malformed cookie header is no session
                return None
            if COOKIE in cookie:
                return cookie[COOKIE].value
    return None


def _header(scope: Scope, wanted: bytes) -> str | None:
    for name, value in scope.get("headers", []):
        if name == wanted:
            return str(value.decode("latin-1"))
    return None


class Guard:
    """The ASGI layer that checks every request and stamps every response."""

    def __init__(self, app: App, sessions: Sessions, port: Callable[[], int]) -> None:
        self.app = app
        self.sessions = sessions
        self.port = port  # known only once the socket is bound

    def hosts(self) -> set[str]:
        return {f"127.0.0.1:{self.port()}", f"localhost:{self.port()}"}

    def origins(self) -> set[str]:
        return {f"http://{host}" for host in self.hosts()}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def stamped(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [h for h in message.get("headers", [])
                           if not h[0].lower().startswith(b"access-control-")]
                message["headers"] = headers + HEADERS
            await send(message)

        refusal = self._refusal(scope)
        if refusal is not None:
            status, text = refusal
            await _plain(stamped, status, text)
            return
        await self.app(scope, _capped(receive), stamped)

    def _refusal(self, scope: Scope) -> tuple[int, str] | None:
        """Why this request is refused before any route sees it, or ``None``."""
        if (_header(scope, b"host") or "").lower() not in self.hosts():
            return 421, "wrong Host: open the address mailslot web printed"
        method, path = scope["method"], scope["path"]
        if method not in ("GET", "HEAD", "POST"):
            return 405, "method not allowed"
        length = _header(scope, b"content-length")
        if length is not None and (not length.isdigit() or int(length) > MAX_BODY):
            return 413, f"request too large (at most {MAX_BODY} bytes)"
        if method == "POST":
            origin = _header(scope, b"origin")
            if origin is not None and origin not in self.origins():
                return 403, "refused: the request did not come from this page"
            if _header(scope, b"sec-fetch-site") not in (None, "same-origin", "none"):
                return 403, "refused: the request did not come from this page"
        public = path in PUBLIC or path.startswith("/static/")
        if not public and self.sessions.csrf(session_of(scope)) is None:
            return 401, ("no session: open the address with the token that `mailslot web` "
                         "printed (it works once; restart mailslot web for a new one)")
        return None


class TooLarge(Exception):
    """A body longer than :data:`MAX_BODY` (sent without a length, or lying about it)."""


def _capped(receive: Receive) -> Receive:
    """``receive``, failing once the body passes :data:`MAX_BODY` bytes."""
    taken = 0

    async def wrapped() -> Message:
        nonlocal taken
        message = await receive()
        if message["type"] == "http.request":
            taken += len(message.get("body", b""))
            if taken > MAX_BODY:
                raise TooLarge(f"request too large (at most {MAX_BODY} bytes)")
        return message

    return wrapped


async def _plain(send: Send, status: int, text: str) -> None:
    body = (text + "\n").encode("utf-8")
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
