"""``mailslot serve --http [ADDR:]PORT``: the MCP tools over Streamable HTTP, and every agent
as an A2A agent (:mod:`.a2a_server`), under uvicorn.

The same tools and results as stdio (:func:`mailslot.frontends.mcp.server.build_server`); what
differs is who is speaking. Each request's identity comes only from its bearer
credential (:mod:`mailslot.frontends.http.guard` checks it, and every other rule of the door), and
a tool call re-opens its mailbox with the credential (a rotated or revoked one is
refused at the next call). Each MCP session is a server session of its agent, listed,
fenced and ended as :mod:`mailslot.frontends.http.mcp_sessions` says.

Listening: loopback by default. Any other address needs TLS (``--tls-cert``/``--tls-key``)
or ``--behind-proxy ADDR`` (then only that address may connect). Shutdown (SIGINT or
SIGTERM) stops accepting, lets requests in flight finish (up to ``GRACE_SECONDS``), then
ends the sessions (their presence records are marked stopped). Only ``serve --http``
imports this module.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import sys
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

from ...core.errors import InvalidInput, StoreError
from ...core.values import replace  # either kind of value class
from ...service.mailbox import Mailbox
from .api import serve_api
from .guard import Authenticate, Door, Guard, answer
from .limits import Repeats
from .mcp_sessions import MCP_PATH, Sessions
from .wire import API

GRACE_SECONDS = 10
SESSION_IDLE_SECONDS = 30 * 60.0
DEFAULT_RATE_PER_MINUTE = 600


@dataclass(frozen=True)
class Listen:
    """Where and how to listen, checked: a non-loopback address has TLS or a proxy."""

    host: str
    port: int
    tls_cert: str | None = None
    tls_key: str | None = None
    proxy: str | None = None
    names: tuple[str, ...] = ()
    """Extra ``Host`` names clients use (``--allow-host``), e.g. the proxy's public name."""

    def __post_init__(self) -> None:
        if (self.tls_cert is None) != (self.tls_key is None):
            raise InvalidInput("--tls-cert and --tls-key go together")
        if self.tls_cert is not None and self.proxy is not None:
            raise InvalidInput("use --tls-cert/--tls-key or --behind-proxy, not both")
        if self.proxy is not None:
            _address(self.proxy, "--behind-proxy")
        if not self.loopback and self.tls_cert is None and self.proxy is None:
            raise InvalidInput(
                f"--http {self.host}: a non-loopback address needs TLS (--tls-cert and "
                "--tls-key) or --behind-proxy ADDR (the proxy that terminates TLS)")

    @property
    def loopback(self) -> bool:
        return self.host == "localhost" or _address(self.host, "--http").is_loopback

    def door(self, *, max_body_bytes: int, rate_per_minute: int) -> Door:
        """The allow-lists for this listener: its own address, loopback names, ``names``."""
        shown = f"[{self.host}]" if ":" in self.host else self.host
        hosts = {f"{shown}:{self.port}"}
        if self.loopback:
            hosts |= {f"localhost:{self.port}", f"127.0.0.1:{self.port}", f"[::1]:{self.port}"}
        for name in (n.lower() for n in self.names):
            hosts |= {name} if ":" in name else {name, f"{name}:{self.port}"}
        scheme = "http" if self.tls_cert is None and self.proxy is None else "https"
        origins = {f"{scheme}://{h}" for h in hosts}
        if scheme == "https":  # a browser omits the default port from Origin
            origins |= {f"https://{h.removesuffix(':443')}" for h in hosts}
        return Door(frozenset(hosts), frozenset(origins), max_body_bytes, rate_per_minute,
                    proxy=self.proxy, scheme=scheme)


def parse_listen(spec: str) -> tuple[str, int]:
    """``[ADDR:]PORT`` (``[::1]:8080`` for IPv6) → address and port; loopback by default.
    Port 0 asks the system for a free one (the "listening on" line names it)."""
    host, _, port = spec.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 <= int(port) < 65536:
        raise InvalidInput(f"--http {spec}: expected [ADDR:]PORT with a port from 0 to 65535 "
                           "(0: any free port)")
    return host, int(port)


def _address(text: str, option: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        raise InvalidInput(f"{option} {text}: expected an IP address (or localhost)") from None


def build_app(
    authenticate: Authenticate,
    door: Door,
    *,
    session_idle: float = SESSION_IDLE_SECONDS,
) -> Callable[[dict[str, Any], Any, Any], Any]:
    """The whole ASGI application: lifespan, the door, ``/mcp``, ``/api/`` and ``/a2a/``."""
    from .a2a_server import A2A, A2A_PATH

    sessions = Sessions(max_body_bytes=door.max_body_bytes, idle=session_idle)
    a2a = A2A(door.scheme)

    async def route(scope: dict[str, Any], receive: Any, send: Any,
                    open_box: Callable[[], Mailbox], key: str) -> None:
        if scope["path"].rstrip("/") == MCP_PATH:
            await sessions.serve(scope, receive, send, open_box, key)
        elif scope["path"].startswith(API):
            await serve_api(scope, receive, send, open_box, door.max_body_bytes)
        elif scope["path"].startswith(A2A_PATH + "/"):
            await a2a.serve(scope, receive, send, open_box, door.max_body_bytes)
        else:
            await answer(send, 404, {"error": "not found"})

    guard = Guard(route, door, authenticate)

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "lifespan":
            await guard(scope, receive, send)
            return
        async with AsyncExitStack() as stack:
            await receive()  # lifespan.startup
            await sessions.run(stack)
            await a2a.run(stack)
            await send({"type": "lifespan.startup.complete"})
            await receive()  # lifespan.shutdown, after requests in flight have finished
        await send({"type": "lifespan.shutdown.complete"})

    return app


def serve_http(authenticate: Authenticate, listen: Listen, *, max_body_bytes: int,
               rate_per_minute: int = DEFAULT_RATE_PER_MINUTE,
               session_idle: float = SESSION_IDLE_SECONDS) -> None:
    """Run until SIGINT/SIGTERM; the access log goes to stderr.

    The socket is bound first, so the allow-lists name the port really bound (port 0
    asks for any free one), and a port in use is one line, not a uvicorn traceback."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("mailslot.frontends.http.access").setLevel(logging.INFO)
    for handler in logging.getLogger().handlers:
        handler.addFilter(Repeats())
    sock = bind(listen)
    listen = replace(listen, port=sock.getsockname()[1])
    app = build_app(authenticate, listen.door(max_body_bytes=max_body_bytes,
                                              rate_per_minute=rate_per_minute),
                    session_idle=session_idle)
    with sock:
        _announcing_server(config(app, listen), listen).run(sockets=[sock])


def bind(listen: Listen) -> socket.socket:
    """The listening socket of ``listen`` (not yet accepting)."""
    try:
        family = socket.getaddrinfo(listen.host, listen.port, type=socket.SOCK_STREAM)[0][0]
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((listen.host, listen.port))
        except OSError:
            sock.close()
            raise
    except OSError as exc:
        raise StoreError(f"cannot listen on {listen.host}:{listen.port}: "
                         f"{exc.strerror or exc}") from None
    return sock


def _announcing_server(settings: Any, listen: Listen) -> Any:
    """A uvicorn server that says on stderr, once, where it listens when it is ready."""
    import uvicorn

    class Announcing(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if self.should_exit:  # the start failed (uvicorn has logged why)
                return
            scheme = "http" if listen.tls_cert is None else "https"
            for server in self.servers:
                for bound in server.sockets:
                    host, port = bound.getsockname()[:2]
                    shown = f"[{host}]" if ":" in host else host
                    print(f"mailslot: listening on {scheme}://{shown}:{port}{MCP_PATH}",
                          file=sys.stderr, flush=True)

    return Announcing(settings)


def config(app: Callable[..., Any], listen: Listen, *, cap: int | None = None) -> Any:
    """uvicorn's settings: no server header, no proxy headers trusted, our access log,
    uvicorn's logs through ours (``log_config=None``: one format, one filter of repeats),
    and the connection bounds of :mod:`mailslot.frontends.http.limits` (``cap`` connections at
    once; by default from the file limit)."""
    import uvicorn

    from .guard import MAX_HEADER_BYTES
    from .limits import KEEP_ALIVE_SECONDS, backlog, connection_cap, protocol

    cap = connection_cap() if cap is None else cap

    return uvicorn.Config(
        app, host=listen.host, port=listen.port, ssl_certfile=listen.tls_cert,
        ssl_keyfile=listen.tls_key, lifespan="on", access_log=False, server_header=False,
        proxy_headers=False, timeout_graceful_shutdown=GRACE_SECONDS,
        h11_max_incomplete_event_size=MAX_HEADER_BYTES, log_level="warning",
        log_config=None, http=protocol(cap), backlog=backlog(cap),
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
    )
