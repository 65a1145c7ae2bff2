"""The MCP sessions of ``serve --http``: each one a server session of its agent.

A client that opens an MCP session (the ``initialize`` handshake of the 2025 protocol
versions, answered with an ``Mcp-Session-Id``) gets a server session of its agent of its
own, exactly as a local ``mailslot serve`` would: a new session id, listed by
``mailslot sessions`` and ``list_agents`` (``sessions=true``) with program ``http``,
shown online while it lasts, fenced like any other. One shared MCP server
(:func:`mailslot.frontends.mcp.server.build_server`, built at the first session: building the tools
is the slow part) answers for every agent; each MCP session has a session manager of the
SDK's of its own, and a presence record kept while it runs. A tool call learns its
agent and session from the request that opened the session (:data:`_CURRENT`).

Fencing travels in the opening request's headers, the HTTP form of ``serve --exclusive
--replace-session ID``:

- ``Mailslot-Exclusive: 1``: refuse (409) while another session of the agent is online;
- ``Mailslot-Replace-Session: ID``: fence session ``ID`` of the agent (its next write is
  refused) and take its place; implies ``Mailslot-Exclusive``. An unknown ID is 422.

The answer to the opening request carries ``Mailslot-Session: ID``, the new session's id.

A session ends, and its presence record is marked stopped, when its client ends it
(``DELETE``), after ``idle`` seconds with no request in flight (a client that is gone: an
open event stream counts as a request in flight), or when the server stops.

Requests of the sessionless protocol (a ``Mcp-Protocol-Version`` newer than the
handshake versions, as the SDK routes them) have no MCP session to map: all of one
credential's share one server session, started at its first such request and ended
after ``idle`` seconds without one, or at shutdown. The fencing headers apply to MCP
sessions only.

A session id of one credential does not exist for another (404, as for an unknown id).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, MutableMapping
from contextlib import AsyncExitStack
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.abc import TaskGroup, TaskStatus
from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from ...access.fencing import new_session_id
from ...core.errors import MailslotError
from ...mail.presence import Beacon
from ...service.mailbox import Mailbox
from ..mcp import answered
from ..mcp.server import build_server, keep_presence
from .guard import BodyTooLarge, answer, read_body, replaying
from .wire import error_body

MCP_PATH = "/mcp"
MAX_PER_CREDENTIAL = 64
"""Open MCP sessions one credential may have at once: each is a server of its own, so a
client that opens sessions and never ends them is refused (503) rather than let grow."""
EXCLUSIVE = "mailslot-exclusive"
REPLACE = "mailslot-replace-session"
SESSION = "mailslot-session"
"""The response header naming the server session an opening request started."""

OpenBox = Callable[[], Mailbox]

_CURRENT: ContextVar[tuple[OpenBox, str]] = ContextVar("mailslot_http_session")
"""Whose session a request or tool call serves: the credential's mailbox and the session
id. Set in the request that opens (or, sessionless, uses) a session; the session's tasks
are started from that request and so inherit it, and the shared server's tools
(:func:`_session_box`) read it."""


@dataclass
class Live:
    """One running server session: its MCP server's manager, and how busy it is."""

    owner: str  # the credential key (never the secret) that opened it
    session: str  # the mailslot session id
    stop: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    manager: StreamableHTTPSessionManager | None = None
    beacon: Beacon | None = None
    busy: int = 0
    last: float = field(default_factory=time.monotonic)


class Sessions:
    """Route each ``/mcp`` request to its server session; start, reap and stop them."""

    def __init__(self, *, max_body_bytes: int, idle: float) -> None:
        self.max_body_bytes = max_body_bytes
        self.idle = idle
        self._by_mcp: dict[str, Live] = {}  # Mcp-Session-Id → its session
        self._sessionless: dict[str, Live] = {}  # credential key → its shared session
        self._server: MCPServer[Any] | None = None  # every session's tools and answers
        self._tasks: TaskGroup | None = None
        self._lock: anyio.Lock | None = None
        self._opening: dict[str, int] = {}  # credential key → opens not yet established

    async def run(self, stack: AsyncExitStack) -> None:
        """Open the task group the sessions run in; ``stack`` stops them at shutdown."""
        self._lock = anyio.Lock()
        answered.enable()  # tool calls' answers are seen whole here (_Trace)
        stack.callback(answered.enable, False)
        self._tasks = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(self._tasks.cancel_scope.cancel)
        self._tasks.start_soon(self._reap)

    def live(self) -> list[Live]:
        """The sessions running now (for tests and the shutdown log)."""
        return [*self._by_mcp.values(), *self._sessionless.values()]

    async def serve(self, scope: dict[str, Any], receive: Any, send: Any,
                    open_box: OpenBox, key: str) -> None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope["headers"]}
        version = headers.get("mcp-protocol-version")
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            assert self._lock is not None, "serve() outside run()"
            try:
                async with self._lock:  # one shared session, even for a burst of firsts
                    live = self._sessionless.get(key)
                    if live is None:
                        live = await self._start(open_box, key, exclusive=False,
                                                 replace=None)
                        self._sessionless[key] = live
            except MailslotError as exc:
                code, error = error_body(exc)
                return await answer(send, code, error)
            await self._pass(live, open_box, scope, receive, send)
            return
        mcp_id = headers.get("mcp-session-id")
        if mcp_id is not None:
            known = self._by_mcp.get(mcp_id)
            if known is None or known.owner != key:  # another credential's: not there
                return await _rpc_error(send, 404, "Session not found")
            ended = await self._pass(known, open_box, scope, receive, send)
            if scope["method"] == "DELETE" and ended is not None and ended < 400:
                self._end(known)
            return
        await self._open(scope, receive, send, open_box, key, headers)

    async def _open(self, scope: dict[str, Any], receive: Any, send: Any,
                    open_box: OpenBox, key: str, headers: dict[str, str]) -> None:
        """A request without a session id: only an ``initialize`` POST opens one."""
        if scope["method"] != "POST":
            return await _rpc_error(send, 400, "Bad Request: Missing session ID")
        try:
            body = await read_body(receive, self.max_body_bytes)
        except BodyTooLarge:
            return await answer(send, 413, {"error": "request body too large"})
        if not _is_initialize(body):
            return await _rpc_error(send, 400, "Bad Request: Missing session ID")
        if not self._reserve(key):
            return await _rpc_error(send, 503, f"Too many open sessions for this credential "
                                    f"({MAX_PER_CREDENTIAL}): end one (DELETE) first")
        try:
            await self._establish(scope, receive, send, open_box, key, headers, body)
        finally:
            self._opening[key] -= 1  # established (counted in _by_mcp) or given up
            if not self._opening[key]:
                del self._opening[key]

    def _reserve(self, key: str) -> bool:
        """Take one of the credential's session places, or say there is none. No await
        between the count and the taking: opens arriving together cannot all pass."""
        held = sum(live.owner == key for live in self._by_mcp.values())
        if held + self._opening.get(key, 0) >= MAX_PER_CREDENTIAL:
            return False
        self._opening[key] = self._opening.get(key, 0) + 1
        return True

    async def _establish(self, scope: dict[str, Any], receive: Any, send: Any,
                         open_box: OpenBox, key: str, headers: dict[str, str],
                         body: bytes) -> None:
        """Start the session an ``initialize`` opens, in a place ``_reserve`` took."""
        replace = headers.get(REPLACE, "").strip() or None
        exclusive = replace is not None or headers.get(EXCLUSIVE, "").strip().lower() in (
            "1", "true", "yes")
        try:
            live = await self._start(open_box, key, exclusive=exclusive, replace=replace)
        except MailslotError as exc:
            status, error = error_body(exc)
            return await answer(send, status, error)
        opened: list[str] = []

        async def named_send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                for name, value in message.get("headers", []):
                    if name.lower() == b"mcp-session-id":
                        opened.append(value.decode("latin-1"))
                message = {**message, "headers": [
                    *message.get("headers", []), (SESSION.encode(), live.session.encode())]}
            await send(message)

        established = False
        try:
            answered = await self._pass(live, open_box, scope, replaying(body, receive),
                                         named_send)
            established = bool(opened) and answered is not None and answered < 400
        finally:
            if established:
                self._by_mcp[opened[0]] = live
            else:  # refused by the transport, or cut off: nothing was established
                self._end(live)

    async def _start(self, open_box: OpenBox, key: str, *, exclusive: bool,
                     replace: str | None) -> Live:
        """A new server session of the credential's agent, its MCP server running."""
        assert self._tasks is not None, "serve() outside run()"
        live = Live(owner=key, session=new_session_id())
        _CURRENT.set((open_box, live.session))  # this request, and the session's tasks
        answered.WIRE.set(live.session)

        def begin() -> tuple[MCPServer[Any], Beacon]:
            box = _session_box()
            box.start_session(live.session, exclusive=exclusive, replace=replace)
            if self._server is None:  # once: building the tools takes a while
                self._server = build_server(_session_box, program="http", presence=False,
                                            shared=True)
            return self._server, box.beacon(program="http", key=f"http-{live.session}")

        server, live.beacon = await anyio.to_thread.run_sync(begin)
        server.streamable_http_app(  # a new session manager: one per session
            streamable_http_path=MCP_PATH, max_request_body_size=self.max_body_bytes,
            session_idle_timeout=None,  # ours: see _reap
            # A tool call is answered with one JSON body, not an event stream: the SSE
            # library ends every stream at SIGTERM, which would cut off the answer to a
            # send still being stored (a graceful stop lets it finish and answers it).
            # No tool sends anything mid-call.
            json_response=True,
            # the door (http_guard) has checked Host and Origin already
            transport_security=TransportSecuritySettings(
                enable_dns_rebinding_protection=False),
        )
        live.manager = server.session_manager
        await self._tasks.start(_run, live)
        return live

    async def _pass(self, live: Live, open_box: OpenBox, scope: dict[str, Any],
                    receive: Any, send: Any) -> int | None:
        """Let the session's manager answer, as that session; it is busy meanwhile.
        Then what its tool calls left for once their answers were out is done (or
        dropped, for an answer that was cut off): :mod:`mailslot.frontends.mcp.answered`."""
        assert live.manager is not None
        status: list[int] = []
        trace = _Trace()

        async def heard() -> Any:
            event = await receive()
            trace.asked(event)
            return event

        async def watched(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
            await send(message)
            trace.sent(message)

        live.busy += 1
        _CURRENT.set((open_box, live.session))
        answered.WIRE.set(live.session)
        try:
            await live.manager.handle_request(scope, heard, watched)
        finally:
            live.busy -= 1
            live.last = time.monotonic()
            for action in answered.settle(live.session, *trace.ids(status)):
                await anyio.to_thread.run_sync(action)
        return status[0] if status else None

    def _end(self, live: Live) -> None:
        """Stop a session: its presence record is marked stopped, its id answers 404."""
        for table in (self._by_mcp, self._sessionless):
            for name in [n for n, s in table.items() if s is live]:
                del table[name]
        live.stop.cancel()

    async def _reap(self) -> None:
        """End the sessions whose clients are gone: nothing in flight for ``idle`` s."""
        every = max(0.05, min(self.idle / 4, 5.0))
        while True:
            await anyio.sleep(every)
            now = time.monotonic()
            for live in self.live():
                if live.busy == 0 and now - live.last > self.idle:
                    self._end(live)


async def _run(live: Live, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
    """Run one session's manager, and its presence record, until the session ends or
    the server stops."""
    assert live.manager is not None and live.beacon is not None
    with live.stop:
        async with keep_presence(live.beacon), live.manager.run():
            task_status.started()
            await anyio.sleep_forever()


class _Trace:
    """What one HTTP request asked (its tool calls' ids) and whether each answer was sent
    whole: a tool's answer is one JSON body (``json_response``), so it is out once the
    body's last part was handed to the server's socket."""

    def __init__(self) -> None:
        self._asked = bytearray()
        self._answer = bytearray()
        self._whole = False

    def asked(self, event: Any) -> None:
        if isinstance(event, dict) and event.get("type") == "http.request":
            self._asked += event.get("body", b"")  # the transport holds it to its limit

    def sent(self, message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.body" and b'"tools/call"' in self._asked:
            self._answer += message.get("body", b"")
            self._whole = not message.get("more_body", False)

    def ids(self, status: list[int]) -> tuple[list[object], list[object]]:
        """The ids of the tool calls asked, and of those whose results were sent whole."""
        asked = [m["id"] for m in _messages(self._asked)
                 if m.get("method") == "tools/call" and "id" in m]
        if not asked or not self._whole or not status or status[0] != 200:
            return asked, []
        return asked, [m["id"] for m in _messages(self._answer)
                       if "result" in m and "id" in m]


def _messages(body: bytes | bytearray) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a body (one, or a batch); nothing for anything else."""
    try:
        parsed = json.loads(body or b"null")
    except ValueError:
        return []
    items = parsed if isinstance(parsed, list) else [parsed]
    return [m for m in items if isinstance(m, dict) and _hashable(m.get("id"))]


def _hashable(value: object) -> bool:
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def _session_box() -> Mailbox:
    """The mailbox of the session the running request or tool call belongs to: a fresh,
    re-checked one each call (the credential may have been rotated or revoked)."""
    open_box, session = _CURRENT.get()
    box = open_box()
    box.session = session
    return box


def _is_initialize(body: bytes) -> bool:
    try:
        message = json.loads(body or b"null")
    except ValueError:
        return False
    return isinstance(message, dict) and message.get("method") == "initialize"



async def _rpc_error(send: Any, status: int, message: str) -> None:
    """A JSON-RPC error without a request id, as the SDK's transport answers one."""
    await answer(send, status, {"jsonrpc": "2.0", "id": None,
                                "error": {"code": -32600, "message": message}})
