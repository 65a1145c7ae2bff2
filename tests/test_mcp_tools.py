"""The MCP tools as plain functions: called directly over a real file mailbox, no server,
no client, no event loop (the SDK path is tests/test_mcp_server.py)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from mcp.types import CallToolResult, TextContent

from mailslot import Mailbox
from mailslot.core.errors import InvalidInput, NotFound
from mailslot.core.framing import HEADER
from mailslot.core.names import GROUP_ACCEPT
from mailslot.frontends.mcp import tools as mcp_tools

Box = Callable[[str | None], Mailbox]


def as_agent(box: Box, agent: str) -> mcp_tools.Opener:
    return lambda: box(agent)


def facts(result: CallToolResult) -> dict[str, Any]:
    assert result.structured_content is not None
    return result.structured_content


def text(result: CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def test_send_read_and_done_through_the_functions(box: Box) -> None:
    claude, gemini = as_agent(box, "claude"), as_agent(box, "gemini")
    sent = facts(mcp_tools.send_message(claude, to="gemini", subject="Schema change",
                                        body="users.name is now full_name"))
    assert sent["from"] == "claude" and sent["to"] == ["gemini"]
    assert "subject" not in sent and "body" not in sent  # sender text only ever framed

    page = mcp_tools.read_messages(gemini)
    assert [m["id"] for m in facts(page)["messages"]] == [sent["id"]]
    assert text(page).startswith(HEADER) and "> users.name is now full_name" in text(page)
    assert facts(page)["framed"] == text(page)

    done = facts(mcp_tools.mark_done(gemini, message_ids=sent["id"]))
    assert done["messages"] == [{"id": sent["id"], "state": "done"}]
    assert facts(mcp_tools.read_messages(gemini))["messages"] == []
    status = facts(mcp_tools.message_status(claude, message_id=sent["id"]))
    assert [(r["agent"], r["state"]) for r in status["recipients"]] == [("gemini", "done")]


def test_reply_and_the_sent_box(box: Box) -> None:
    claude, gemini = as_agent(box, "claude"), as_agent(box, "gemini")
    question = box("claude").send("gemini", "Which port?", "for the dev server")
    answer = facts(mcp_tools.reply(gemini, message_id=question.id, body="8080"))
    assert answer["to"] == ["claude"] and answer["in_reply_to"] == question.id
    sent = facts(mcp_tools.read_messages(gemini, box="sent"))
    assert [s["id"] for s in sent["sent"]] == [answer["id"]]
    assert sent["sent"][0]["recipients"] == [{"agent": "claude", "state": "unread",
                                              "rung": "stored"}]
    listed = facts(mcp_tools.list_agents(claude))
    assert listed["you"] == "claude"
    assert {"claude", "gemini"} <= {a["name"] for a in listed["agents"]}


def test_the_roster_puts_online_agents_first_with_group_counts_and_subagents(
        box: Box, cli: Callable[..., Any]) -> None:
    """``list_agents`` and ``who``: online agents first (or only), the member count of a
    group gate, and whose subagent an agent is."""
    box("claude").send("gemini", "hi", "b")
    box("gemini").send("zed", "hi", "b")
    assert cli("agent", "add", "lead", "--yes").code == 0
    assert cli("agent", "add", "kid", "--parent", "lead", "--yes").code == 0
    for name in ("gemini", "zed"):  # both behind the group gate "crew"
        box(name).store.set_accept(name, GROUP_ACCEPT + "crew")
    beacon = box("zed").beacon(program="test")
    beacon.announce()
    try:
        listed = facts(mcp_tools.list_agents(as_agent(box, "observer")))["agents"]
        assert listed[0]["name"] == "zed" and listed[0]["online"]
        assert not any(a["online"] for a in listed[1:])
        by_name = {a["name"]: a for a in listed}
        assert by_name["kid"]["subagent_of"] == "lead"
        assert by_name["lead"]["subagent_of"] is None
        assert (by_name["gemini"]["gate_group"], by_name["gemini"]["group_members"]) == (
            "crew", 2)
        only = facts(mcp_tools.list_agents(as_agent(box, "observer"), online_only=True))
        assert [a["name"] for a in only["agents"]] == ["zed"]
        shown = cli("who", "--online")
        assert shown.code == 0 and shown.out.splitlines()[1].startswith("zed [gated: crew, "
                                                                        "2 members]")
        assert len(shown.out.splitlines()) == 2
        kid = next(line for line in cli("who").out.splitlines() if line.startswith("kid "))
        assert "lead" in kid.split()
    finally:
        beacon.stop()


def test_a_function_raises_the_service_error_the_server_turns_into_a_tool_error(
        box: Box) -> None:
    gemini = as_agent(box, "gemini")
    with pytest.raises(InvalidInput, match="recipient 'all' is reserved"):
        mcp_tools.send_message(gemini, to=["all", "claude"], subject="s", body="b")
    missing = "2026-01-01_000000.000000_x_to_gemini_s_abcdef"
    with pytest.raises(NotFound, match=f"no message {missing} for gemini"):
        mcp_tools.mark_done(gemini, message_ids=missing, state="read")


def test_every_tool_in_the_table_takes_the_opener_first() -> None:
    names = [fn.__name__ for fn, _, _ in mcp_tools.TOOLS]
    assert len(names) == len(set(names)) == 10
    for fn, _, _ in mcp_tools.TOOLS:
        assert next(iter(fn.__annotations__)) == "open_box", fn.__name__


def test_message_status_shows_the_ladder_to_sender_and_recipients_only(box: Box) -> None:
    sent = box("claude").send(["gemini", "codex"], "Ladder", "x", notify_when="read")
    for agent in ("claude", "gemini"):
        status = facts(mcp_tools.message_status(as_agent(box, agent), message_id=sent.id))
        assert {r["agent"]: r["rung"] for r in status["recipients"]} == {
            "gemini": "stored", "codex": "stored"}
        assert "no live session" in status["recipients"][0]["waiting"]
    box("gemini").read(sent.id)
    status = facts(mcp_tools.message_status(as_agent(box, "claude"), message_id=sent.id))
    assert status["recipients"][0]["rung"] == "read"
    with pytest.raises(NotFound, match=re.escape(f"no message {sent.id} for reviewer")):
        mcp_tools.message_status(as_agent(box, "reviewer"), message_id=sent.id)
    notice = facts(mcp_tools.read_messages(as_agent(box, "claude")))["messages"]
    assert [m["from"] for m in notice] == ["mailslot"]


def test_send_message_takes_notify_when(box: Box) -> None:
    sent = facts(mcp_tools.send_message(as_agent(box, "claude"), to="gemini", subject="s",
                                        body="b", notify_when="done"))
    assert sent["notify_when"] == "done"
    with pytest.raises(InvalidInput, match="notify_when must be one of"):
        mcp_tools.send_message(as_agent(box, "claude"), to="gemini", subject="s", body="b",
                               notify_when="soon")
