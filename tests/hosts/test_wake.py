"""Check 7: a `codex-queue` wake into an idle Codex TUI session starts a new turn.

The session is the agent's latest, as Codex's SessionStart hook recorded it, so the
wake config names ``"latest"`` instead of a pasted thread id.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from .harness import World, request_text, wait_for
from .test_checks import outside_framing
from .test_tui import ask, open_tui

Worlds = Callable[..., World]


def test_codex_queue_wakes_an_idle_tui_session(world: Worlds) -> None:
    """The watcher's codex-queue wake makes the open TUI session ask its model again."""
    w = world("codex", {"call": None})
    w.install("alice", "--hooks")
    w.mailbox.mkdir(mode=0o700, exist_ok=True)
    (w.mailbox / "config.json").write_text(json.dumps({"agents": {"alice": {
        "wake_on_mail": True, "wake_method": "codex-queue", "session_id": "latest",
        "cwd": str(w.project)}}}), encoding="utf-8")
    pane = open_tui(w)
    ask(w, pane, "Hello there")
    latest = w.mailbox / "latest" / "alice" / "codex"
    wait_for(latest.exists, 30, "the SessionStart hook to record the session")
    pane.wait_screen("Ask Codex to do anything", 30)
    sent = w.send("bob", "alice", "please look", "QUEUE-BODY")
    notice = f"bob sent message {sent}"
    before = time.time()
    done = w.mailslot("watch", "--once")
    assert "wake_ok" in (w.mailbox / "log" / "events.jsonl").read_text(), done.stdout
    woke = wait_for(lambda: [r for r in w.provider.model_requests()
                             if notice in request_text(r)], 60, "the queued turn")[0]
    assert woke["t"] >= before
    # The notice carries no text of the message; the prompt hook of the queued turn
    # shows the message itself, framed.
    assert "> QUEUE-BODY" in request_text(woke)
    assert outside_framing([woke], "QUEUE-BODY") == []
