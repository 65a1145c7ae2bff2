"""New mail heard without polling: MCP's ``subscriptions/listen`` (2026-07-28).

A client opens a listen stream asking for ``resourceSubscriptions:
["mail://inbox/AGENT"]``, its own agent's inbox; whenever new unread mail reaches that
inbox (stored by any process: the store is watched, not this server's own sends), the
stream carries ``notifications/resources/updated`` for that URI, and the client reads
the resource (the unread mail, framed as every tool frames it) or calls
``read_messages``. A listen stream hears only its own agent's inbox: any other URI it
asks for is dropped from what the server honours (the SDK alone would honour any).

One :class:`Bell` per server: the SDK's subscription bus, and a thread that watches the
store (:meth:`~mailslot.store.Store.watch_mail`, or a look every
:data:`POLL_SECONDS` where the store cannot tell) while anyone listens, comparing each
listening agent's unread ids with the last look. Only ``serve`` imports this module.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import anyio

from mcp.server.mcpserver import MCPServer
from mcp.server.subscriptions import InMemorySubscriptionBus, ResourceUpdated

from ...core.errors import MailslotError
from ...service.mailbox import Mailbox

INBOX = "mail://inbox/"
POLL_SECONDS = 1.0
RECHECK_SECONDS = 5.0
"""With events, still look this often (a change in a folder made a moment before can be
missed by the file-system watch)."""
SETTLE_SECONDS = 0.02


def inbox_uri(agent: str) -> str:
    return INBOX + agent


class Bell:
    """Rings a listening agent's inbox URI when new unread mail reaches it."""

    def __init__(self, open_box: Callable[[], Mailbox]) -> None:
        self.bus = InMemorySubscriptionBus()
        self._open_box = open_box
        self._listening: Counter[str] = Counter()
        self._seen: dict[str, set[str]] = {}
        self._lock = threading.Lock()
        self._kicked = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    async def middleware(self, ctx: Any, call_next: Any) -> Any:
        """A listen stream hears its own agent's inbox only, and is watched for while
        it lasts; every other request passes untouched."""
        if ctx.method != "subscriptions/listen":
            return await call_next(ctx)
        box = await anyio.to_thread.run_sync(self._open_box)
        agent = box.bound_agent()
        params = dict(ctx.params or {})
        asked = dict(params.get("notifications") or {})
        mine = inbox_uri(agent)
        asked["resourceSubscriptions"] = [u for u in asked.get("resourceSubscriptions") or []
                                          if u == mine]
        params["notifications"] = asked
        self._loop = asyncio.get_running_loop()
        await anyio.to_thread.run_sync(self._listen, box, agent)
        try:
            return await call_next(replace(ctx, params=params))
        finally:
            with self._lock:
                self._listening[agent] -= 1
                if self._listening[agent] <= 0:
                    del self._listening[agent]
                    self._seen.pop(agent, None)

    def _listen(self, box: Mailbox, agent: str) -> None:
        """Count ``agent`` as listened for (its unread mail now is not news); start
        watching the store at the first listener."""
        now = _unread(box, agent)
        with self._lock:
            self._listening[agent] += 1
            self._seen.setdefault(agent, now)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, args=(box,),
                                                name="mailslot-mcp-listen", daemon=True)
                self._thread.start()

    def _run(self, box: Mailbox) -> None:
        """Watch while anyone listens; end (and stop watching) when no one does."""
        watching = box.store.watch_mail(self._kicked.set)
        wait = RECHECK_SECONDS if watching is not None else POLL_SECONDS
        try:
            while True:
                self._kicked.wait(wait)
                self._kicked.clear()
                threading.Event().wait(SETTLE_SECONDS)  # a send touches several folders
                with self._lock:
                    agents = list(self._listening)
                    if not agents:
                        self._thread = None
                        return
                for agent in agents:
                    self._look(box, agent)
        finally:
            if watching is not None:
                watching.close()

    def _look(self, box: Mailbox, agent: str) -> None:
        now = _unread(box, agent)
        with self._lock:
            if agent not in self._listening:
                return
            new = now - self._seen.get(agent, set())
            self._seen[agent] = now
        if new and self._loop is not None:
            event = ResourceUpdated(uri=inbox_uri(agent))
            try:
                asyncio.run_coroutine_threadsafe(self.bus.publish(event), self._loop)
            except RuntimeError:  # the server's loop has closed
                return


def _unread(box: Mailbox, agent: str) -> set[str]:
    try:
        return {i for i, _ in box.store.entries(agent, ("unread",))}
    except MailslotError:
        return set()


def add_inbox_resource(server: MCPServer[Any], open_box: Callable[[], Mailbox]) -> None:
    """``mail://inbox/{agent}``: the caller's own unread mail, framed as ``read_messages``
    shows it (another agent's inbox is refused)."""
    from .tools import read_messages

    @server.resource(INBOX + "{agent}", name="inbox", mime_type="text/plain",
                     description="Your unread mail, framed as read_messages shows it.")
    def inbox(agent: str) -> str:
        box = open_box()
        if agent.lower() != box.bound_agent():
            raise MailslotError(f"{box.bound_agent()} reads only its own inbox")
        result = read_messages(lambda: box)
        text = result.content[0]
        return text.text if hasattr(text, "text") else ""
