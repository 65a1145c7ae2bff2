"""Qwen Code's own door against the real Qwen Code TUI (in tmux, offline, the scripted
provider): the ``qwen-peer`` wake hands mail's notice to an idle session through its own
cross-session inbox (where the session's ``agents.crossSessionInbound`` is ``accept``;
held for the person by default; refused with ``refuse``), and ``mailslot bridge qwen``
lists mailslot's agents, so that the session's own ``send_message`` to one becomes mail
from the session's agent. The first test also pins the shapes (docs/qwen-peers.md)."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mailslot.hosts.qwen import cross_session

from . import hosts_more  # noqa: F401  (registers Qwen Code in the harness)
from .conftest import VERSIONS
from .harness import Pane, World, merge_json, request_text, running_bridge, wait_for

QWEN = VERSIONS.get("qwen", "absent")
pytestmark = pytest.mark.skipif(QWEN == "absent", reason="qwen is not installed")
Worlds = Callable[..., World]
READY = "Type your message"
ENVELOPE = "<cross_session_message"


def qwen_world(world: Worlds, inbound: str | None, allow: tuple[str, ...] = ()
               ) -> tuple[World, Pane]:
    """quinn in an idle Qwen Code TUI (hooks, the qwen-peer wake), its session recorded;
    ``inbound``: its agents.crossSessionInbound setting."""
    w = world("qwen", {"call": None})
    assert w.install("quinn", "--hooks", "--scope", "user").returncode == 0
    settings = w.home / ".qwen" / "settings.json"
    if inbound is not None:
        merge_json(settings, {"agents": {"crossSessionInbound": inbound}})
    if allow:
        merge_json(settings, {"permissions": {"allow": list(allow)},
                              "tools": {"allowed": ["mcp__mailslot__send_message", *allow]}})
    w.set_wake("quinn", "qwen-peer")
    pane = w.pane("qwen", ["qwen"])
    pane.wait_screen(READY, 90)
    pane.type("Hello there")
    pane.wait_screen("FAKE-MODEL-DONE", 60)
    wait_for(lambda: (w.mailbox / "latest" / "quinn" / "qwen").exists(), 30,
             "the SessionStart hook to record the session")
    wait_for(lambda: [r for r in records(w) if r.get("ipcPath")], 30,
             "the session's record to name its inbox")
    return w, pane


def records(w: World) -> list[dict[str, Any]]:
    folder = w.home / ".qwen" / "sessions"
    found = []
    for path in folder.glob("*.json") if folder.is_dir() else []:
        try:
            found.append(json.loads(path.read_text()))
        except ValueError:
            continue
    return found


def mail_from_codex(w: World, body: str) -> tuple[str, int, dict[str, Any]]:
    before = len(w.provider.model_requests())
    sent = w.send("codex", "quinn", "please look", body)
    w.mailslot("watch", "--once")
    lines = (w.mailbox / "log" / "events.jsonl").read_text().splitlines()
    done = next(e for e in map(json.loads, lines)
                if e.get("id") == sent and e["event"] in ("wake_ok", "wake_failed"))
    return sent, before, dict(done)


def test_an_accepting_idle_session_is_woken_through_its_own_inbox(world: Worlds) -> None:
    w, _ = qwen_world(world, "accept")
    [record] = [r for r in records(w) if r.get("kind") == "tui"]
    session = (w.mailbox / "latest" / "quinn" / "qwen").read_text().strip()
    # the shapes qwen-peer reads: a change here is a protocol change (fail loudly)
    assert record["sessionId"] == session and record["schemaVersion"] == cross_session.SCHEMA
    assert record["procStart"] == cross_session.proc_start(record["pid"])
    assert record["pidNs"] == cross_session.pid_ns() and record["qwenVersion"] == QWEN
    path = w.home / ".qwen" / "sessions" / f"{record['pid']}.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    sock = record["ipcPath"]
    assert stat.S_ISSOCK(os.lstat(sock).st_mode) and stat.S_IMODE(os.lstat(sock).st_mode) == 0o600
    assert len(record["ipcToken"]) == 64
    door = cross_session.find_door(session, w.env)
    assert (door.pid, door.socket) == (record["pid"], sock)
    sent, before, done = mail_from_codex(w, "DOOR-BODY")
    assert done["event"] == "wake_ok" and "delivered" in done["said"], done
    woke = request_text(wait_for(lambda: [
        r for r in w.provider.model_requests()[before:]
        if f"codex sent message {sent}" in request_text(r)], 60, "the turn the door started")[0])
    assert ENVELOPE in woke and 'name="mailslot"' in woke  # Qwen's own framing of a peer
    assert "DOOR-BODY" not in woke.split(ENVELOPE, 1)[1].split("</cross_session_message>")[0]
    assert 'origin="controller"' not in woke and 'origin="own-process"' not in woke


def test_by_default_the_notice_is_held_for_the_person(world: Worlds) -> None:
    w, pane = qwen_world(world, None)
    _, before, done = mail_from_codex(w, "HELD-BODY")
    assert done["event"] == "wake_ok" and "held for the person" in done["said"], done
    pane.wait_screen("Held a message from another session", 30)
    assert not [r for r in w.provider.model_requests()[before:]
                if ENVELOPE in request_text(r)]


def test_a_refusing_session_is_not_woken(world: Worlds) -> None:
    w, _ = qwen_world(world, "refuse")
    _, before, done = mail_from_codex(w, "REFUSED-BODY")
    assert done["event"] == "wake_failed" and "refused" in done["reason"], done
    assert not [r for r in w.provider.model_requests()[before:]
                if ENVELOPE in request_text(r)]


@pytest.fixture
def bridged(world: Worlds) -> Iterator[tuple[World, Pane]]:
    """quinn's session open, codex known to the mailbox, ``mailslot bridge qwen``
    running and listing codex as an external session."""
    w, pane = qwen_world(world, "accept", allow=("send_message", "list_agents"))
    w.send("bob", "codex", "hello", "codex has a mailbox")
    with running_bridge(w, "qwen", records, "codex"):
        yield w, pane


def test_send_message_to_a_bridged_agent_is_mail_from_the_sessions_agent(
        bridged: tuple[World, Pane]) -> None:
    w, pane = bridged
    listed = w.program("qwen", "sessions", "ps").stdout
    assert "codex" in listed and "external" in listed, listed
    # send_message is deferred in 0.24.4: a model reaches it through tool_call (seen)
    w.provider.script({"call": {"tool": "tool_call", "args": {
        "name": "send_message", "arguments": {"to": "codex", "message": "BRIDGE-BODY"}}}})
    pane.type("Tell codex")
    mail = wait_for(lambda: [m for m in w.inbox("codex") if m["from"] != "bob"], 90,
                    f"the bridged message in codex's inbox (bridge log: "
                    f"{(w.root / 'bridge.log').read_text()})")
    assert [m["from"] for m in mail] == ["quinn"], mail
    shown = w.mailslot("--agent", "codex", "read", mail[0]["id"], "--json").stdout
    assert json.loads(shown)["body"] == "BRIDGE-BODY", shown
    assert f"quinn -> codex: {mail[0]['id']}" in (w.root / "bridge.log").read_text()


def test_a_refused_send_message_is_answered_with_a_receipt(
        bridged: tuple[World, Pane]) -> None:
    """codex's gate refuses quinn: no mail, the bridge logs why and answers the session
    with a ``refused`` receipt, and quinn hears why as mail from mailslot."""
    w, pane = bridged
    w.mailslot("--agent", "codex", "gate", "on")
    w.provider.script({"call": {"tool": "tool_call", "args": {
        "name": "send_message", "arguments": {"to": "codex", "message": "GATED-BODY"}}}})
    pane.type("Tell codex")
    wait_for(lambda: "admitted members" in (w.root / "bridge.log").read_text(), 90,
             "the bridge to refuse the message")
    assert [m["from"] for m in w.inbox("codex")] == ["bob"]  # nothing sent
    told = wait_for(lambda: [m for m in w.inbox("quinn") if m["from"] == "mailslot"], 30,
                    "mailslot's notice to quinn")
    assert told[0]["subject"] == "Not delivered to codex"
