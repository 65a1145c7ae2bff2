"""Wakes against the real hosts: check 7 (a `codex-queue` wake into an idle Codex TUI
session starts a new turn) and the resume wakes of Claude Code, Codex and Gemini CLI.

The session is the agent's latest, as the host's SessionStart hook recorded it, so the
wake config names ``"latest"`` instead of a pasted session id.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from .conftest import VERSIONS
from .harness import World, request_text, wait_for
from .test_checks import outside_framing
from .test_tui import ask, open_tui

Worlds = Callable[..., World]


def test_codex_queue_wakes_an_idle_tui_session(world: Worlds) -> None:
    """The watcher's codex-queue wake makes the open TUI session ask its model again."""
    w = world("codex", {"call": None})
    w.install("alice", "--hooks")
    w.mailbox.mkdir(mode=0o700, exist_ok=True)
    w.write_config({"agents": {"alice": {
        "wake_on_mail": True, "wake_method": "codex-queue", "session_id": "latest",
        "cwd": str(w.project)}}})
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


@pytest.mark.parametrize("host", [pytest.param(h, id=f"{h}-{VERSIONS[h]}")
                                  for h in ("claude", "codex", "gemini")])
def test_resume_wake_into_the_latest_session(host: str, world: Worlds) -> None:
    """The `claude`, `codex` (exec resume) and `gemini` wakes, with session_id "latest":
    the watcher resumes the session the SessionStart hook recorded, headless, and its
    resumed start shows the mail (so the hook's matcher covers "resume" too)."""
    w = world(host, {"call": None})
    w.install("alice", "--hooks")
    w.mailbox.mkdir(mode=0o700, exist_ok=True)
    w.write_config({"agents": {"alice": {
        "wake_on_mail": True, "wake_method": host, "session_id": "latest",
        "cwd": str(w.project)}}})
    first = w.run("Hello there")
    assert first.returncode == 0, first.stderr[-2000:]
    assert (w.mailbox / "latest" / "alice" / host).exists()
    sent = w.send("bob", "alice", "please look", "RESUME-BODY")
    done = w.mailslot("watch", "--once")
    assert "wake_ok" in (w.mailbox / "log" / "events.jsonl").read_text(), done.stdout
    woke = [r for r in w.provider.model_requests()
            if f"bob sent message {sent}" in request_text(r)]
    assert woke, [r["reply"] for r in w.provider.model_requests()]
    text = request_text(woke[0])
    assert "Hello there" in text  # the same session, resumed
    assert "1 message waiting for alice" in text and "> RESUME-BODY" in text.replace("&gt;", ">")
    assert outside_framing(woke, "RESUME-BODY") == []
