"""Sessions and fencing: real servers, replaced by id, refused after."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from conftest import Result
from mailslot.core.errors import InvalidInput, Refused
from mailslot.service.mailbox import Mailbox
from support import snapshot, wait_for

pytestmark = pytest.mark.anyio
MAILSLOT = str(Path(sys.executable).parent / "mailslot")
Box = Callable[[str | None], Mailbox]


def params(root: Path, home: Path, *args: str) -> StdioServerParameters:
    env = {"MAILSLOT_DIR": str(root), "HOME": str(home)}
    return StdioServerParameters(command=MAILSLOT, args=["serve", "--agent", "claude", *args],
                                 env=env)


def online(box: Mailbox) -> list[dict[str, Any]]:
    return [s for s in box.sessions("claude") if s["online"]]


async def test_exclusive_replaces_only_the_named_session(
        root: Path, isolated: Path, box: Box) -> None:
    home = isolated / "home"
    async with Client(params(root, home)) as first:
        wait_for(lambda: len(online(box("claude"))) == 1, what="first server online")
        old = online(box("claude"))[0]["session"]
        refused = subprocess.run([MAILSLOT, "serve", "--agent", "claude", "--exclusive"],
                                 capture_output=True, stdin=subprocess.DEVNULL, timeout=60)
        assert refused.returncode == 1 and old.encode() in refused.stderr
        assert b"--replace-session" in refused.stderr
        async with Client(params(root, home, "--replace-session", old)) as second:
            result = await first.call_tool("send_message", {"to": "gemini", "subject": "s",
                                                            "body": "b", "new": True})
            assert result.is_error
            text = str(result.content[0])
            assert f"session ({old}) of claude was replaced by session" in text
            result = await second.call_tool("send_message", {"to": "gemini",
                                                             "subject": "s", "body": "b",
                                                             "new": True})
            assert not result.is_error
            listed = await second.call_tool("list_agents", {"sessions": True, "name": "claude"})
            sessions = (listed.structured_content or {})["sessions"]
            assert {s["session"]: s["replaced_by"] for s in sessions}[old] is not None


def test_replacing_an_unknown_session_is_refused(box: Box) -> None:
    with pytest.raises(InvalidInput, match="no running session"):
        box("claude").start_session("ffff0000", replace="deadbeef")


def test_a_fenced_service_writes_nothing(box: Box, root: Path) -> None:
    box("gemini").send("claude", "s", "b", new=True)
    fenced = box("claude")
    fenced.session = "aaaa1111"
    fenced.store.fence("claude", "aaaa1111", "bbbb2222")  # type: ignore[attr-defined]
    mail = fenced.inbox()[0].message.id
    before = snapshot(root)
    with pytest.raises(Refused, match="replaced by session bbbb2222"):
        fenced.send("gemini", "s", "b")
    with pytest.raises(Refused, match="replaced"):
        fenced.done([mail])
    with pytest.raises(Refused, match="replaced"):
        fenced.read(mail)
    assert snapshot(root) == before  # no message, move, receipt or count written


def test_sessions_command(cli: Callable[..., Result]) -> None:
    assert cli("init").code == 0
    result = cli("sessions", "--json")
    assert result.code == 0 and json.loads(result.out) == []
    assert "no sessions" in cli("sessions", "claude").out
