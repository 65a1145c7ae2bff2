"""A held wake notice, answered by the person at the real Claude Code TUI's dialog.

A session that bypasses its permission prompts holds a message whose sender asserts no
permission mode (mailslot's notice) and asks the person, in a dialog: "Held message from
another session … Deny / Deliver this message to Claude". Here the test presses the keys
a person presses, once to deliver, once to deny, and proves that the running watcher,
which handed the notice over, hears the decision (Claude Code's later
``peer_message_status``), writes it as the message's newest wake line (``wake_ok`` or a
final ``wake_failed``, both ``later: true``) and tells the sender what happened.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from .harness import MAILSLOT, Pane, World, merge_json, request_text, wait_for
from .test_claude_peer import DOOR, records, told_codex
from .test_tui import READY, ask

Worlds = Callable[..., World]
DIALOG = "Held message from another session"
BYPASS = ["claude", "--permission-mode", "bypassPermissions"]
"""The person's choice that makes Claude Code hold mailslot's notice (a sender asserting
no permission mode, into a session that does not prompt)."""
SETTLE = 6.0
"""Seconds a person reads the dialog before pressing a key (see :func:`press`)."""


@pytest.fixture
def held(world: Worlds) -> Iterator[tuple[World, Pane, str, str]]:
    """alice in an idle bypassing TUI (claude-peer wake), a running ``mailslot watch``
    that handed it mail from codex, and the dialog on screen: the world, the pane, the
    message's id and the screen with the dialog."""
    w = world("claude", {"call": None})
    w.install("alice", "--hooks", "--wake")
    config = json.loads((w.mailbox / "config.json").read_text())
    assert config["agents"]["alice"]["wake_method"] == "claude-peer", config
    merge_json(w.home / ".claude" / "settings.json",
               {"skipDangerousModePermissionPrompt": True})
    if os.geteuid() == 0:  # Claude Code refuses to bypass as root outside a sandbox
        w.env["IS_SANDBOX"] = "1"
    pane = w.pane("tui", BYPASS)
    pane.wait_screen(READY["claude"], 90)
    ask(w, pane, "Hello there")
    wait_for(lambda: (w.mailbox / "latest" / "alice" / "claude").exists(), 30,
             "the SessionStart hook to record the session")
    wait_for(lambda: [r for r in records(w) if r.get("status") == "idle"], 60,
             "the session's record to say idle")
    log = (w.root / "watch.log").open("w")
    watcher = subprocess.Popen([MAILSLOT, "--dir", str(w.mailbox), "watch"], cwd=w.project,
                               env=w.env, stdout=log, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL)
    try:
        sent = w.send("codex", "alice", "please look", "HELD-BODY")
        first = wait_for(lambda: wakes(w, sent), 60, "the watcher's wake of the mail")[0]
        assert first["event"] == "wake_ok" and "held" in first["said"], first
        screen = pane.wait_screen(DIALOG, 60)
        yield w, pane, sent, screen
    finally:
        watcher.terminate()
        watcher.wait(timeout=30)
        log.close()


def wakes(w: World, sent: str) -> list[dict[str, Any]]:
    """The wake outcomes logged for ``sent``, oldest first."""
    path = w.mailbox / "log" / "events.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [e for e in map(json.loads, lines)
            if e.get("id") == sent and e["event"] in ("wake_ok", "wake_failed")]


def decision(w: World, sent: str) -> dict[str, Any]:
    """The wake line the person's decision wrote (``later: true``)."""
    return dict(wait_for(lambda: [e for e in wakes(w, sent) if e.get("later")], 60,
                         "the late receipt of the person's decision")[0])


def press(pane: Pane, key: str, shown: Callable[[str], bool]) -> None:
    """Press ``key`` as a person does, once the dialog has settled, until ``shown`` is
    true of the screen. The dialog refuses keys that come too soon after it appears
    (seen: 2.1.332 ignores a key pressed in its first seconds, and each refused key
    starts that wait again), so a person who reads it first is never refused."""
    for _ in range(5):
        time.sleep(SETTLE)
        pane.keys(key)
        try:
            wait_for(lambda: shown(pane.screen()), 5, f"the dialog to take {key}")
            return
        except AssertionError:
            continue
    raise AssertionError(f"the dialog never took {key}:\n{pane.screen()}")


def test_the_person_delivers_a_held_notice(held: tuple[World, Pane, str, str]) -> None:
    w, pane, sent, screen = held
    assert "Deliver this message to Claude" in screen and "Deny" in screen, screen
    assert "did not attest its permission mode" in screen, screen
    assert "verified pid" in screen and "mailslot-" in screen, screen
    before = len(w.provider.model_requests())
    press(pane, "Down", lambda s: "❯ Deliver this message to Claude" in s)
    press(pane, "Enter", lambda s: DIALOG not in s)
    done = decision(w, sent)
    assert done["event"] == "wake_ok" and "let the held wake notice through" in done["said"]
    woke = wait_for(lambda: [r for r in w.provider.model_requests()[before:]
                             if f"codex sent message {sent}" in request_text(r)], 60,
                    "the turn the delivered notice started")
    assert DOOR in request_text(woke[0])
    assert "let the held wake notice through" in told_codex(w, "through")


def test_the_person_denies_a_held_notice(held: tuple[World, Pane, str, str]) -> None:
    w, pane, sent, screen = held
    assert "❯ Deny" in screen, screen  # the default choice
    before = len(w.provider.model_requests())
    press(pane, "Enter", lambda s: DIALOG not in s)
    done = decision(w, sent)
    assert done["event"] == "wake_failed" and done.get("final"), done
    assert "declined" in done["reason"], done
    assert "declined the held wake notice" in told_codex(w, "declined")
    assert not [r for r in w.provider.model_requests()[before:] if DOOR in request_text(r)]
    pane.wait_screen(READY["claude"], 30)  # the dialog is gone; the session is usable
