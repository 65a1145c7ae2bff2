"""The `claude-peer` wake against the real Claude Code TUI (in tmux, offline).

Mail sent as `codex` to an idle Claude Code session is handed to it by the watcher
through Claude Code's own cross-session door; a session that holds such messages makes
the sender hear so; one that refuses them is woken by the waiter instead. The first test
also pins the shapes mailslot relies on (docs/claude-peers.md): when Claude Code changes
them it fails, naming what changed, rather than passing on the fallback.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from typing import Any

from mailslot.hosts import claude
from mailslot.hosts.claude import door as claude_door

from .harness import World, merge_json, request_text, wait_for
from .test_tui import READY, ask, open_tui

Worlds = Callable[..., World]
DOOR = "Another Claude session sent a message:"


def peer_world(world: Worlds, inbound: str | None = None,
               allow: tuple[str, ...] = ()) -> tuple[World, Any]:
    """alice in an idle TUI, installed with --wake (so the ladder chose the door), her
    session recorded by the hooks; ``inbound``: her crossSessionInbound setting;
    ``allow``: more tools her settings allow, written before the TUI starts (a change
    after it is picked up late, and a call before that waits on auto mode's check)."""
    w = world("claude", {"call": None})
    done = w.install("alice", "--hooks", "--wake")
    config = json.loads((w.mailbox / "config.json").read_text())
    assert config["agents"]["alice"]["wake_method"] == "claude-peer", done.stdout
    settings = w.home / ".claude" / "settings.json"
    if inbound is not None:
        merge_json(settings, {"crossSessionInbound": inbound})
    if allow:
        allowed = json.loads(settings.read_text())["permissions"]["allow"]
        merge_json(settings, {"permissions": {"allow": [*allowed, *allow]}})
    pane = open_tui(w)
    ask(w, pane, "Hello there")
    wait_for(lambda: (w.mailbox / "latest" / "alice" / "claude").exists(), 30,
             "the SessionStart hook to record the session")
    pane.wait_screen(READY["claude"], 30)
    wait_for(lambda: [r for r in records(w) if r.get("status") == "idle"], 30,
             "the session's record to say idle")
    return w, pane


def records(w: World) -> list[dict[str, Any]]:
    folder = w.home / ".claude" / "sessions"
    return [json.loads(text) for p in folder.glob("*.json") if (text := p.read_text())]


def mail_from_codex(w: World, body: str) -> tuple[str, int, dict[str, Any]]:
    """Mail from codex to alice and one ``watch --once``: its id, the number of model
    requests before it, and how the wake ended (the events log)."""
    before = len(w.provider.model_requests())
    sent = w.send("codex", "alice", "please look", body)
    return sent, before, wake_of(w, sent)


def wake_of(w: World, sent: str) -> dict[str, Any]:
    """One ``watch --once``, and how the wake of ``sent`` ended (the events log)."""
    w.mailslot("watch", "--once")
    lines = (w.mailbox / "log" / "events.jsonl").read_text().splitlines()
    return dict(next(e for e in map(json.loads, lines)
                     if e.get("id") == sent and e["event"] in ("wake_ok", "wake_failed")))


def woken(w: World, sent: str, before: int, what: str) -> str:
    """The text of the first model request since ``before`` carrying ``sent``'s notice."""
    return request_text(wait_for(lambda: [
        r for r in w.provider.model_requests()[before:]
        if f"codex sent message {sent}" in request_text(r)], 30, what)[0])


def told_codex(w: World, containing: str = "") -> str:
    """What mailslot's notice to codex (the sender) says: the first one ``containing``
    the text, waited for (a later receipt comes after the first notice)."""
    def notices() -> list[str]:
        told = [m["id"] for m in w.inbox("codex") if m["from"] == "mailslot"]
        texts = [w.mailslot("--agent", "codex", "read", i).stdout for i in told]
        return [t for t in texts if containing in t]

    return str(wait_for(notices, 60, f"mailslot's notice to codex with {containing!r}")[0])


def test_idle_session_is_woken_through_the_door_by_mail_from_codex(world: Worlds) -> None:
    w, pane = peer_world(world)
    # The shapes claude-peer speaks: a change here is a protocol change (fail loudly).
    [record] = records(w)
    session = (w.mailbox / "latest" / "alice" / "claude").read_text().strip()
    assert record["sessionId"] == session
    assert record["peerProtocol"] == claude.PEER_PROTOCOL, record
    assert record["kind"] == "interactive"
    sock = record["messagingSocketPath"]
    mode = os.lstat(sock).st_mode
    assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600
    # where claude-peer believes a session's socket: <pid>.sock in a cc-socks folder no
    # one else may write to, held by the process that Claude Code's command line names
    assert os.path.basename(sock) == f"{record['pid']}.sock", sock
    assert os.path.basename(os.path.dirname(sock)).startswith("cc-socks"), sock
    assert os.lstat(os.path.dirname(sock)).st_mode & 0o022 == 0
    assert claude_door._is_claude(record["pid"], record["version"]) is True
    keys = list((w.home / ".claude" / "sessions").glob(f"{record['pid']}.*.key"))
    assert len(keys) == 1 and stat.S_IMODE(keys[0].stat().st_mode) == 0o600
    assert set(json.loads(keys[0].read_text())) >= {"peerToken", "procStart"}
    sent, before, done = mail_from_codex(w, "DOOR-BODY")
    assert done["event"] == "wake_ok" and "handed to session" in done["said"], done
    text = woken(w, sent, before, "the turn the door started")
    assert DOOR in text  # Claude Code's own framing of a peer message
    assert "DOOR-BODY" not in text.split(DOOR, 1)[1].split("This came from")[0]
    # which tool answers, as the model saw it: no bridge runs, so mailslot's only
    assert "Answer mailslot mail only with mailslot: MCP tool `mcp__mailslot__reply`" in text
    assert "`SendMessage` does not reach mailslot agents here (no mailslot bridge" in text
    pane.wait_screen(f"codex sent message {sent}", 30)


def test_a_held_notice_is_reported_to_the_sender(world: Worlds) -> None:
    w, pane = peer_world(world, "hold")
    _, before, done = mail_from_codex(w, "HELD-BODY")
    assert done["event"] == "wake_ok" and "held" in done["said"], done
    pane.wait_screen("Held peer message", 30)
    assert "person's approval" in told_codex(w)
    assert not [r for r in w.provider.model_requests()[before:] if DOOR in request_text(r)]


def test_a_refusing_session_is_woken_by_the_waiter(world: Worlds) -> None:
    w, _ = peer_world(world, "refuse")
    wait_for(lambda: list((w.mailbox / "waiters" / "alice").glob("*"))
             if (w.mailbox / "waiters" / "alice").is_dir() else [], 60, "the waiter to arm")
    sent, before, done = mail_from_codex(w, "REFUSED-BODY")
    assert done["event"] == "wake_ok" and "refuses" in done["said"], done
    text = woken(w, sent, before, "the waiter's wake after the grace")
    assert DOOR not in text  # the waiter's, not the door's
    assert "refuses cross-session messages" in told_codex(w)


def test_doctor_names_the_path_each_wake_takes_and_why(world: Worlds) -> None:
    """With the session open, doctor says the door (its session, pid, version); once the
    session is gone, the waiter, and why the door is not there."""
    w, pane = peer_world(world)
    [record] = records(w)
    session = record["sessionId"]
    shown = w.mailslot("doctor", check=False).stdout
    assert (f"wake path: alice (claude-peer): door: Claude Code's own cross-session socket "
            f"of session {session} (pid {record['pid']}, Claude Code {record['version']}, "
            "idle)") in shown, shown
    pane.kill()
    wait_for(lambda: not os.path.exists(f"/proc/{record['pid']}"), 30,
             "the Claude Code process to end")
    shown = w.mailslot("doctor", check=False).stdout
    line = next((t for t in shown.splitlines() if t.startswith("wake path: alice")), shown)
    assert line.startswith(f"wake path: alice (claude-peer): waiter: session {session} has "
                           "no door now ("), shown
    assert "its session's waiter would wake it, but none runs now" in line, line
