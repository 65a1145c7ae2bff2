"""``mailslot bridge claude`` against the real Claude Code TUI (in tmux, offline).

The bridge lists mailslot's agents in Claude Code's own peer listing; the real model
tools see them: ``ListAgents`` lists ``codex``, and ``SendMessage`` to it becomes mailslot
mail to codex **from the sending session's hook-recorded agent** (alice), the body
without Claude Code's ``<cross-session-message>`` wrapper. A reply from codex reaches
the session through the claude-peer wake (docs/claude-peers.md, "The bridge").
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from .harness import World, request_text, running_bridge, wait_for
from .test_claude_peer import DOOR, peer_world, records, wake_of, woken

Worlds = Callable[..., World]
BODY = "BRIDGE-BODY: please review the parser change"
ALLOW = "SendMessage"
"""Claude Code's own tool as its requests name it (2.1.332), allowed in the settings as a
person who uses it allows it: without, the offline TUI's call waits (seen: no result in
60 s); ``ListAgents`` needs no allowing (seen)."""


@pytest.fixture
def bridged(world: Worlds) -> Iterator[tuple[World, Any]]:
    """alice in an idle Claude Code TUI (hooks and claude-peer wake), codex known to
    the mailbox, and ``mailslot bridge claude`` running and listing codex."""
    w, pane = peer_world(world, allow=(ALLOW,))
    w.send("bob", "codex", "hello", "codex has a mailbox")
    with running_bridge(w, "claude", records, "codex"):
        yield w, pane


def answers_both(text: str) -> bool:
    """Does ``text`` tell the model that mailslot's tools and ``SendMessage`` to the
    bridged agent (codex: bob, a sender only, has no mailbox to list) both answer mailslot mail?"""
    return ("Answer mailslot mail with mailslot: MCP tool `mcp__mailslot__reply`" in text
            and "or with Claude Code's own `SendMessage` to an agent mailslot's bridge "
                "lists in `ListAgents` (now: codex)" in text
            and "`SendMessage` to any other name reaches only Claude sessions" in text)


def calls(w: World, tool: str) -> list[dict[str, Any]]:
    """The model requests the provider answered with a call of ``tool``."""
    return [r for r in w.provider.model_requests() if r["reply"] == f"tool:{tool}"]


def result_after(w: World, tool: str) -> str:
    """The text of the first model request that carries the result of the (first) call
    of ``tool`` (the provider names a call ``toolu_<n>``; a title request may come
    between)."""
    first = calls(w, tool)[0]["n"]
    return request_text(wait_for(lambda: [
        r for r in w.provider.model_requests()
        if r["n"] > first and f"toolu_{first}" in request_text(r)], 60,
        f"the request that carries {tool}'s result")[0])


def run_tool(w: World, pane: Any, tool: str, args: dict[str, Any], prompt: str) -> str:
    """One turn in which the model calls ``tool`` with ``args``; the result it was shown."""
    w.provider.script({"call": {"tool": tool, "args": args}})
    pane.type(prompt)
    wait_for(lambda: calls(w, tool), 90, f"the model to call {tool}")
    return result_after(w, tool)


def test_send_message_to_a_bridged_agent_is_mail_from_the_sessions_agent(
        bridged: tuple[World, Any]) -> None:
    w, pane = bridged
    w.send("bob", "alice", "status?", "BOB-BODY")  # the prompt hook shows it
    listed = run_tool(w, pane, "ListAgents", {}, "Who else is here")
    peers = listed.split("Peer sessions", 1)[-1]
    assert "codex [" in peers and "idle" in peers, listed
    # the prompt hook told the model both tools answer, and whom SendMessage reaches
    prompt = next(request_text(r) for r in w.provider.model_requests()
                  if "BOB-BODY" in request_text(r))
    assert answers_both(prompt), [t for t in prompt.splitlines() if "Answer mailslot" in t]
    pane.wait_screen("shift+tab to cycle", 60)
    said = run_tool(w, pane, "SendMessage", {"to": "codex", "message": BODY}, "Tell codex")
    mail = wait_for(lambda: [m for m in w.inbox("codex") if m["from"] != "bob"], 60,
                    f"the bridged message in codex's inbox (bridge log: "
                    f"{(w.root / 'bridge.log').read_text()})")
    assert [m["from"] for m in mail] == ["alice"], mail
    shown = w.mailslot("--agent", "codex", "read", mail[0]["id"], "--json").stdout
    assert json.loads(shown)["body"] == BODY, shown
    assert "success" in said and "codex" in said, said

    # codex replies; the claude-peer wake hands the reply to alice's live session
    pane.wait_screen("shift+tab to cycle", 60)
    w.provider.script({"call": None})
    before = len(w.provider.model_requests())
    reply = w.mailslot("--agent", "codex", "reply", mail[0]["id"], "--body", "REPLY-BODY",
                       "--json").stdout
    sent = json.loads(reply)["id"]
    done = wake_of(w, sent)
    assert done["event"] == "wake_ok" and "handed to session" in done["said"], done
    text = woken(w, sent, before, "the turn the reply started")
    assert DOOR in text  # through Claude Code's own door, not the waiter
    assert answers_both(text.split(DOOR, 1)[1]), text  # the notice's own words



def test_a_refused_send_message_is_reported_to_the_session(
        bridged: tuple[World, Any]) -> None:
    """codex's gate refuses alice: no mail, and the bridge's receipt reaches the real
    session, which Claude Code shows its model as its own delivery notice (its own
    fixed text per status: the receipt's ``reason`` is not shown, docs/claude-peers.md)."""
    w, pane = bridged
    w.mailslot("--agent", "codex", "gate", "on")
    run_tool(w, pane, "SendMessage", {"to": "codex", "message": "GATED-BODY"}, "Tell codex")
    refused = "Your message to another session was refused"
    notice = request_text(wait_for(lambda: [
        r for r in w.provider.model_requests() if refused in request_text(r)], 60,
        "Claude Code's delivery notice of the refusal")[0])
    [codex] = [r for r in records(w) if (r.get("mailslotBridge") or {}).get("agent")]
    assert f"recipient: uds:{codex['messagingSocketPath']}" in notice, notice
    assert "admitted members" in (w.root / "bridge.log").read_text()
    assert [m["from"] for m in w.inbox("codex")] == ["bob"]  # nothing sent
