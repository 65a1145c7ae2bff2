"""A2A push notifications of ``serve --http``: a caller's task updates POSTed to a URL
it names, **only on a host the owner allows** (``a2a.push_hosts`` in config.json: host
names, or ``host:port``; none by default, and then the cards say push notifications are
not offered).

The configs live in this server's memory (the SDK's store, kept per caller): a restart
forgets them, and a caller that wants to be sure sets its config again. While a task has
a config, one follower of this server watches its mail and sends each new state (the
SDK's sender: the config's ``token`` as ``X-A2A-Notification-Token``, its
``authentication`` as ``Authorization``); the host is checked again before every POST,
so a host the owner takes off the list gets nothing more.
"""

from __future__ import annotations

import logging
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import httpx
from a2a.server.context import ServerCallContext
from a2a.server.tasks import BasePushNotificationSender, InMemoryPushNotificationConfigStore
from a2a.types import TaskPushNotificationConfig
from a2a.utils.errors import InvalidParamsError, PushNotificationNotSupportedError

from ...core.errors import MailslotError
from ...service.mailbox import Mailbox

log = logging.getLogger("mailslot.frontends.http.a2a")
MAX_FOLLOWED = 1000
"""Tasks followed for push notifications at once by one server."""
POST_SECONDS = 10.0

Events = Callable[[], AsyncIterator[Any]]


def allowed_hosts(box: Mailbox) -> frozenset[str]:
    """The owner's ``a2a.push_hosts``, lowercased; a malformed list allows nothing."""
    try:
        hosts = box.config.a2a().get("push_hosts", [])
    except MailslotError:
        return frozenset()
    if not isinstance(hosts, list):
        return frozenset()
    return frozenset(h.strip().lower() for h in hosts if isinstance(h, str) and h.strip())


def allows(hosts: frozenset[str], url: str) -> bool:
    """Is ``url`` an http(s) URL on one of ``hosts`` (by name, or name and port)?"""
    try:
        parsed = urllib.parse.urlsplit(url)
        port = parsed.port
    except ValueError:
        return False
    host = (parsed.hostname or "").lower()
    if parsed.scheme not in ("http", "https") or not host:
        return False
    shown = f"[{host}]" if ":" in host else host
    return host in hosts or shown in hosts or (port is not None and f"{shown}:{port}" in hosts)


class Pushes:
    """Push configs and the followers that send them."""

    def __init__(self, open_hosts: Callable[[], Awaitable[frozenset[str]]]) -> None:
        self.configs = InMemoryPushNotificationConfigStore()
        self._open_hosts = open_hosts
        self._followed: set[str] = set()
        self._tasks: Any = None
        self._client: httpx.AsyncClient | None = None
        self._sender: BasePushNotificationSender | None = None

    async def run(self, tasks: Any) -> None:
        """Start: followers run in ``tasks`` (the server's task group)."""
        self._tasks = tasks
        self._client = httpx.AsyncClient(timeout=POST_SECONDS, follow_redirects=False)
        self._sender = BasePushNotificationSender(self._client, self.configs,
                                                  push_url_validator=self._allowed)

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()

    async def _allowed(self, url: str) -> bool:
        return allows(await self._open_hosts(), url)

    async def check(self, url: str) -> None:
        """Refuse a config whose URL is not on a host the owner allows."""
        hosts = await self._open_hosts()
        if not hosts:
            raise PushNotificationNotSupportedError(
                message="push notifications are off: the owner allows no host "
                        "(a2a.push_hosts in config.json)")
        if not allows(hosts, url):
            raise InvalidParamsError(
                message="push notifications go only to the hosts the owner allows "
                        "(a2a.push_hosts in config.json)")

    async def add(self, config: TaskPushNotificationConfig, context: ServerCallContext,
                  events: Events) -> TaskPushNotificationConfig:
        """Keep ``config`` and follow its task (``events``: its updates, until done)."""
        await self.check(config.url)
        if config.task_id not in self._followed and len(self._followed) >= MAX_FOLLOWED:
            raise InvalidParamsError(message=f"this server follows {MAX_FOLLOWED} tasks "
                                             "for push notifications already")
        kept = await self.configs.set_info(config.task_id, config, context)
        if config.task_id not in self._followed and self._tasks is not None:
            self._followed.add(config.task_id)
            self._tasks.start_soon(self._follow, config.task_id, events)
        return kept

    async def _follow(self, task_id: str, events: Events) -> None:
        """Send each update of ``task_id`` to its configs, until it ends."""
        assert self._sender is not None
        try:
            async for event in events():
                if not await self.configs.get_info_for_dispatch(task_id):
                    return  # every config of it was deleted
                await self._sender.send_notification(task_id, event)
        except Exception as exc:  # a follower's trouble ends that follower only
            log.warning("a2a: stopped following task %s: %s", task_id, exc)
        finally:
            self._followed.discard(task_id)
            await anyio.sleep(0)
