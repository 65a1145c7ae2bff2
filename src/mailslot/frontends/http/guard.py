"""The door of ``mailslot serve --http``: every check a request passes before any tool.

One ASGI middleware, in this order, so a refused request costs as little as possible and
tells an attacker nothing:

1. behind a proxy, only the proxy's address may connect (403);
2. header block at most ``max_header_bytes`` (431);
3. ``Host`` in the allow-list (421) and ``Origin``, when sent, in the allow-list (403):
   DNS rebinding from a browser page cannot reach the server;
4. a declared body over ``max_body_bytes`` is refused before it is read (413; the MCP
   transport also stops a body that grows past it while streaming);
5. ``Authorization: Bearer SECRET`` turned into a bound mailbox by ``authenticate``
   (401 ``unauthorized`` for a missing, wrong, rotated or revoked credential alike);
6. a token bucket per credential (429 with ``Retry-After``).

The access log line holds the time, client address, method, path (no query string),
status and duration: never a subject, a body, a name or a secret.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import anyio

from ...core.errors import InvalidInput, MailslotError
from ...service.mailbox import Mailbox

ASGIApp = Callable[[dict[str, Any], Any, Any], Awaitable[None]]
Authenticate = Callable[[str], Mailbox]
"""A bearer secret → the mailbox bound to its agent; raises for any bad credential."""

access_log = logging.getLogger("mailslot.frontends.http.access")

MAX_HEADER_BYTES = 16 * 1024


@dataclass(frozen=True)
class Door:
    """What the door lets in (built once from the command line)."""

    allowed_hosts: frozenset[str]
    allowed_origins: frozenset[str]
    max_body_bytes: int
    rate_per_minute: int
    proxy: str | None = None
    max_header_bytes: int = MAX_HEADER_BYTES
    scheme: str = "http"
    """How clients reach the server (``https`` with TLS or behind a proxy): what the
    A2A cards name as the agents' endpoints."""


@dataclass
class RateLimit:
    """A token bucket per credential: ``per_minute`` requests, bursts up to the same."""

    per_minute: int
    clock: Callable[[], float] = time.monotonic
    _buckets: dict[str, tuple[float, float]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def wait_for(self, key: str) -> float:
        """0 when ``key`` may go now (and a token is spent), else seconds to wait."""
        now = self.clock()
        rate = self.per_minute / 60.0
        with self._lock:
            tokens, then = self._buckets.get(key, (float(self.per_minute), now))
            tokens = min(float(self.per_minute), tokens + (now - then) * rate)
            if tokens >= 1.0:
                self._buckets[key] = (tokens - 1.0, now)
                return 0.0
            self._buckets[key] = (tokens, now)
            return (1.0 - tokens) / rate


def credential_key(secret: str) -> str:
    """The name a credential goes by in memory (rate buckets, sessions): never the secret."""
    return hashlib.sha256(secret.encode()).hexdigest()


class Guard:
    """The ASGI middleware; ``inner(scope, receive, send, open_box, key)`` serves a
    request that passed every check."""

    def __init__(
        self,
        inner: Callable[[dict[str, Any], Any, Any, Callable[[], Mailbox], str],
                        Awaitable[None]],
        door: Door,
        authenticate: Authenticate,
    ) -> None:
        self.inner = inner
        self.door = door
        self.authenticate = authenticate
        self.rate = RateLimit(door.rate_per_minute)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return  # lifespan is handled by the server; websockets are not served
        started = time.monotonic()
        status = [0]

        async def logged_send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self._admit(scope, receive, logged_send)
        finally:
            client = scope.get("client") or ("-", 0)
            access_log.info("%s %s %s %d %.1fms", client[0], scope["method"], scope["path"],
                            status[0], (time.monotonic() - started) * 1000)

    async def _admit(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        door = self.door
        headers = _headers(scope["headers"])
        client = scope.get("client")
        if door.proxy is not None and (client is None or client[0] != door.proxy):
            return await _refuse(send, 403, "forbidden")
        if sum(len(k) + len(v) for k, v in scope["headers"]) > door.max_header_bytes:
            return await _refuse(send, 431, "headers too large")
        if headers.get("host", "").lower() not in door.allowed_hosts:
            return await _refuse(send, 421, "host not allowed")
        origin = headers.get("origin")
        if origin is not None and origin.lower() not in door.allowed_origins:
            return await _refuse(send, 403, "origin not allowed")
        length = headers.get("content-length", "0")
        if not length.isdigit() or int(length) > door.max_body_bytes:
            return await _refuse(send, 413, "request body too large")
        scheme, _, secret = headers.get("authorization", "").partition(" ")
        secret = secret.strip()
        if scheme.lower() != "bearer" or not secret:
            return await _refuse(send, 401, "unauthorized")
        try:
            await anyio.to_thread.run_sync(self.authenticate, secret)
        except MailslotError:
            return await _refuse(send, 401, "unauthorized")
        key = credential_key(secret)
        wait = self.rate.wait_for(key)
        if wait > 0:
            return await _refuse(send, 429, "rate limited",
                                 [(b"retry-after", str(max(1, round(wait))).encode())])
        # Each tool call opens (and so re-checks) its own mailbox: a credential rotated
        # or revoked mid-session is refused at the next call.
        await self.inner(scope, receive, send, lambda: self.authenticate(secret), key)


def _headers(raw: Iterable[tuple[bytes, bytes]]) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in raw}


async def _refuse(send: Any, status: int, reason: str,
                  extra: list[tuple[bytes, bytes]] | None = None) -> None:
    if status == 401:
        extra = [(b"www-authenticate", b'Bearer realm="mailslot"')]
    await answer(send, status, {"error": reason}, extra)


async def answer(send: Any, status: int, body: Any,
                 extra: list[tuple[bytes, bytes]] | None = None) -> None:
    """A whole JSON response."""
    data = json.dumps(body, ensure_ascii=False).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()),
        (b"cache-control", b"no-store"), *(extra or [])]})
    await send({"type": "http.response.body", "body": data})


class BodyTooLarge(InvalidInput):
    """A request body past the server's limit (answered 413, still bad input)."""


async def read_body(receive: Any, limit: int) -> bytes:
    """A request's whole body, refused past ``limit`` bytes before more is read (a
    client that goes away mid-body leaves what came so far)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks)
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(f"request body too large (over {limit} bytes)")
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


def replaying(body: bytes, receive: Any) -> Any:
    """A ``receive`` that gives ``body`` (already read) first, then the client's events."""
    given = [False]

    async def again() -> dict[str, Any]:
        if not given[0]:
            given[0] = True
            return {"type": "http.request", "body": body, "more_body": False}
        return dict(await receive())

    return again
