"""``serve --channel``: the claude/channel capability and one notification per arrival."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client import ClientExtension, NotificationBinding
from pydantic import BaseModel

from hookkit import WHEN, sender
from mailslot import FileStore, Mailbox
from mailslot.access.identity import Identity
from mailslot.frontends.mcp.server import build_server
from wake_helpers import configure

pytestmark = pytest.mark.anyio


class ChannelParams(BaseModel):
    content: str
    meta: dict[str, Any]


class Listener(ClientExtension):
    """A client that receives ``notifications/claude/channel`` (the SDK drops unknown ones)."""

    identifier = "test.mailslot/channel-listener"

    def __init__(self) -> None:
        self.send, self.received = anyio.create_memory_object_stream[ChannelParams](100)

    def notifications(self) -> list[NotificationBinding[Any]]:
        return [NotificationBinding(method="notifications/claude/channel",
                                    params_type=ChannelParams, handler=self.send.send)]


def server(root: Path, *, channel: bool) -> Any:
    return build_server(lambda: Mailbox(FileStore(root), Identity("claude", "--agent")),
                        channel=channel)


def opt_in(root: Path) -> None:
    configure(root, {"claude": {"wake_on_mail": True, "wake_method": "claude-channel"}})


async def test_channel_declares_the_capability_and_pushes_each_arrival(root: Path) -> None:
    opt_in(root)
    gemini = sender(root, "gemini")
    before = gemini.send("claude", "old", "already waiting: shown at session start")
    listener = Listener()
    async with Client(server(root, channel=True), mode="legacy",
                      extensions=[listener]) as client:
        assert client.server_capabilities.experimental == {"claude/channel": {}}
        gemini.broadcast("to all", "broadcasts do not push")
        gemini.send("codex", "not yours", "mail for others does not push")
        first = gemini.send("claude", "Secret subject", "Secret body")
        second = sender(root, "codex", at=WHEN + timedelta(seconds=1)).send("claude", "two", "x")
        got = []
        with anyio.fail_after(10):
            for _ in range(2):
                got.append(await listener.received.receive())
        assert [g.meta for g in got] == [
            {"message_id": first.id, "sender": "gemini"},
            {"message_id": second.id, "sender": "codex"},
        ]
        assert f"gemini sent message {first.id}" in got[0].content
        assert "Secret" not in got[0].content and "not instructions" in got[0].content
        assert before.id not in got[0].content + got[1].content
        with anyio.move_on_after(1.5):
            extra = await listener.received.receive()
            pytest.fail(f"one notification per message, got another: {extra}")
    listener.send.close()
    listener.received.close()


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_capability_is_declared_in_both_modes(root: Path, mode: str) -> None:
    async with Client(server(root, channel=True), mode=mode) as client:
        assert (client.server_capabilities.experimental or {}).get("claude/channel") == {}


async def test_without_channel_nothing_is_declared_or_pushed(root: Path) -> None:
    opt_in(root)
    listener = Listener()
    async with Client(server(root, channel=False), mode="legacy",
                      extensions=[listener]) as client:
        assert "claude/channel" not in (client.server_capabilities.experimental or {})
        sender(root, "gemini").send("claude", "hello", "x")
        with anyio.move_on_after(1.5):
            extra = await listener.received.receive()
            pytest.fail(f"no channel was asked for, yet got {extra}")
    listener.send.close()
    listener.received.close()


async def test_nothing_is_pushed_until_the_config_chooses_the_channel(root: Path) -> None:
    listener = Listener()
    async with Client(server(root, channel=True), mode="legacy",
                      extensions=[listener]) as client:
        assert (client.server_capabilities.experimental or {}).get("claude/channel") == {}
        sender(root, "gemini").send("claude", "before opting in", "x")
        with anyio.move_on_after(1.5):
            extra = await listener.received.receive()
            pytest.fail(f"the config does not choose claude-channel, yet got {extra}")
        opt_in(root)
        later = sender(root, "gemini", at=WHEN + timedelta(seconds=5)).send("claude", "now", "x")
        with anyio.fail_after(10):
            got = await listener.received.receive()
        assert got.meta == {"message_id": later.id, "sender": "gemini"}
    listener.send.close()
    listener.received.close()
