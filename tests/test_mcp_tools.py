"""The MCP tools as plain functions: called directly over a real file mailbox, no server,
no client, no event loop (the SDK path is tests/test_mcp_server.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from mcp.types import CallToolResult, TextContent

from mailslot import Mailbox
from mailslot.core.errors import InvalidInput, NotFound
from mailslot.core.framing import HEADER
from mailslot.mcp import tools as mcp_tools

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
    assert sent["sent"][0]["recipients"] == [{"agent": "claude", "state": "unread"}]
    listed = facts(mcp_tools.list_agents(claude))
    assert listed["you"] == "claude"
    assert {"claude", "gemini"} <= {a["name"] for a in listed["agents"]}


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
