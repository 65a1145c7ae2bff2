"""Gates and admission (issue 12): the service, the CLI and the MCP tool."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import Result
from mailslot.errors import InvalidInput, Refused
from mailslot.mailbox import Mailbox
from mailslot.store import FileStore

Box = Callable[[str | None], Mailbox]
Run = Callable[..., Result]


def subjects(box: Mailbox) -> list[str]:
    return [i.message.subject for i in box.inbox()]


def test_gated_inbox_refuses_others_and_the_request_passes(box: Box) -> None:
    box("claude").send("gemini", "hello", "b", new=True)
    box("claude").gate.switch(True)
    with pytest.raises(Refused, match="mailslot join claude") as caught:
        box("gemini").send("claude", "secret plan", "the text")
    assert "nothing was sent" in str(caught.value)
    assert "secret plan" not in subjects(box("claude"))
    request = box("gemini").gate.join("claude", "I review your PRs")
    assert box("claude").gate.pending() == {"gemini": request.id}
    assert "Access request: gemini asks to write to you" in subjects(box("claude"))
    assert box("claude").gate.admit("gemini")
    assert box("claude").gate.pending() == {}
    assert "claude admitted you" in subjects(box("gemini"))
    box("gemini").send("claude", "now allowed", "b")
    assert box("claude").gate.revoke("gemini")
    with pytest.raises(Refused):
        box("gemini").send("claude", "again", "b")


def test_refuse_tells_the_requester(box: Box) -> None:
    box("claude").gate.switch(True)
    box("gemini").gate.join("claude", "please")
    box("claude").gate.refuse("gemini")
    assert "claude refused your request" in subjects(box("gemini"))
    with pytest.raises(InvalidInput, match="no pending request"):
        box("claude").gate.refuse("gemini")


def test_who_passes_a_gate(box: Box, root: Path, cli: Run) -> None:
    FileStore(root).save_config({"owner": "sarah"})
    box("claude").gate.switch(True)
    box("sarah").send("claude", "from the owner", "b")
    box("claude").send("claude", "to myself", "b")
    replying = box("gemini")
    box("claude").send("gemini", "question", "b", new=True)
    replying.reply(replying.inbox()[0].message.id, "answer")  # replies are not gated
    Mailbox.open(agent="helper", peer_of="claude").send("claude", "from a peer child", "b")
    assert {"from the owner", "to myself", "Re: question", "from a peer child"} <= set(
        subjects(box("claude")))


def test_join_an_open_inbox_is_pointless(box: Box) -> None:
    with pytest.raises(InvalidInput, match="open"):
        box("gemini").gate.join("claude", "hi")


def test_child_cannot_change_gates(box: Box) -> None:
    child = Mailbox.open(agent="helper", peer_of="claude")
    with pytest.raises(Refused, match="cannot change gates"):
        child.gate.switch(True)


def test_cli_gate_commands(cli: Run) -> None:
    assert cli("--agent", "claude", "gate", "on").code == 0
    refused = cli("--agent", "gemini", "send", "--to", "claude", "--subject", "s",
                  "--body", "b", "--new")
    assert refused.code == 1 and "mailslot join claude" in refused.err
    assert cli("--agent", "gemini", "join", "claude", "--note", "hi").code == 0
    pending = cli("--agent", "claude", "pending", "--json")
    assert list(json.loads(pending.out)) == ["gemini"]
    assert cli("--agent", "claude", "admit", "gemini").code == 0
    shown = cli("--agent", "claude", "gate", "--json")
    assert json.loads(shown.out) == {"agent": "claude", "accept": "members",
                                     "members": ["gemini"], "pending": []}
    assert cli("--agent", "claude", "revoke", "gemini").code == 0
    assert cli("--agent", "claude", "gate", "off").code == 0
    assert "anyone" in cli("--agent", "claude", "gate").out


@pytest.mark.anyio
async def test_mcp_gate_tool(box: Box) -> None:
    from mcp import Client

    from mailslot.mcp_server import build_server

    async with Client(build_server(lambda: box("claude"))) as claude, \
            Client(build_server(lambda: box("gemini"))) as gemini:
        result = await claude.call_tool("gate", {"action": "on"})
        assert (result.structured_content or {})["accept"] == "members"
        result = await gemini.call_tool("send_message", {"to": "claude", "subject": "s",
                                                         "body": "b"})
        assert result.is_error and "join" in str(result.content[0])
        result = await gemini.call_tool("gate", {"action": "join", "name": "claude",
                                                 "note": "please"})
        assert not result.is_error
        result = await claude.call_tool("gate", {"action": "admit", "name": "gemini"})
        assert (result.structured_content or {})["members"] == ["gemini"]
        result = await claude.call_tool("gate", {"action": "admit"})
        assert result.is_error


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
