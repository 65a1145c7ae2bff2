"""``mailslot serve --channel``: push a notice into a running session of a host with
channels (:attr:`~mailslot.host_registry.host.Host.channel`).

Such a host lets an MCP server that declares an experimental capability send a
notification into the session; the session shows each as an event, even while idle,
when the person started the host with its channels enabled (docs/hosts.md).

mailslot sends one notification per directed message that arrives while the server
runs (see :mod:`mailslot.service.arrivals`): ``content`` is the same short notice a woken
agent gets (sender and id, never a subject or body), ``meta`` holds ``message_id`` and
``sender`` (keys of letters, digits and underscores only: others are dropped). mailslot
never declares a permission-relay capability, which would relay tool approvals.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import anyio

from mcp import ServerSession, types
from mcp.server import ServerRequestContext
from mcp.server.context import CallNext, HandlerResult

from ... import host_registry as hosts
from ...core.errors import MailslotError
from ...core.message import Message
from ...mail.invocation import invocation
from ...service.arrivals import Arrivals
from ...service.mailbox import Mailbox
from ...wake.notice import wake_notice

_HOST = next(h for h in hosts.every() if h.channel is not None)
"""The host whose channels this server speaks (there is one)."""
assert _HOST.channel is not None
CAPABILITY, METHOD = _HOST.channel
METHOD_NAME = _HOST.install_wakes["channel"]
"""The ``wake_method`` that lets this server push into its session (config.json)."""
CHECK_SECONDS = 1.0
"""With file-system events, a safety look this often; without them, the polling interval."""
POLL_SECONDS = 0.2

logger = logging.getLogger(__name__)


def channel_params(agent: str, message: Message, cli: str) -> dict[str, Any]:
    """The notification's params for one arrived message (``cli``: see invocation)."""
    return {"content": wake_notice(agent, [message], cli),
            "meta": {"message_id": message.id, "sender": message.sender}}


class Channel:
    """One server's channel: declares the capability and pushes arrivals once connected."""

    def __init__(self) -> None:
        self._session: ServerSession | None = None
        self._ready = anyio.Event()

    async def middleware(self, ctx: ServerRequestContext[Any, Any],
                         call_next: CallNext) -> HandlerResult:
        """Declare the capability at the handshake and keep the session to push through.

        ``MCPServer`` has no setting for experimental capabilities, so the result of
        ``initialize`` (and ``server/discover`` for clients of the 2026 protocol) gets it.
        """
        result = await call_next(ctx)
        if ctx.method in ("initialize", "server/discover") and isinstance(result, dict):
            capabilities = result.setdefault("capabilities", {})
            capabilities["experimental"] = {**(capabilities.get("experimental") or {}),
                                            CAPABILITY: {}}
        if ctx.method in ("notifications/initialized", "server/discover") and self._session is None:
            self._session = ctx.session  # usable for the whole connection
            self._ready.set()
        return result

    async def push(self, open_box: Callable[[], Mailbox]) -> None:
        """Until cancelled: send a notification for every message that arrives."""
        box = open_box()
        arrivals = Arrivals(box, METHOD_NAME)  # what is here now was shown at start
        if not arrivals.chosen():
            logger.warning('mailslot: serve --channel: agents.%s.wake_method is not '
                           '"%s" with wake_on_mail in config.json, so nothing '
                           "is pushed until it is", box.agent, METHOD_NAME)
        kick = threading.Event()
        watching = arrivals.watch(kick.set)
        try:
            await self._ready.wait()
            while True:
                kick.clear()
                try:
                    arrived = arrivals.new()
                except MailslotError as exc:
                    logger.warning("mailslot: channel cannot read the mailbox: %s", exc)
                    arrived = []
                for message in arrived:
                    await self._send(channel_params(
                        box.agent, message, invocation(box.agent, str(box.store.location))))
                wait = CHECK_SECONDS if watching is not None else POLL_SECONDS
                await anyio.to_thread.run_sync(kick.wait, wait, abandon_on_cancel=True)
        finally:
            if watching is not None:
                watching.close()

    async def _send(self, params: dict[str, Any]) -> None:
        assert self._session is not None
        note = types.Notification[dict[str, Any], str](method=METHOD, params=params)
        await self._session.send_notification(note)  # type: ignore[arg-type]
