"""Checks that need a host's interactive terminal UI, run in a real tmux pane.

Check 3b (mail sent mid-session reaches the model at the next prompt, through the
host's prompt hook) and check 6 (Claude Code woken while idle by its background
waiter; no waiter left after /exit or under ``claude -p``; an idle waiter costs almost
no CPU).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import VERSIONS
from .harness import Pane, World, request_text, wait_for

TUI = {"claude": ["claude"], "codex": ["codex"],
       "gemini": ["gemini", "-m", "gemini-2.5-flash"]}
READY = {"claude": "shift+tab to cycle", "codex": "Ask Codex to do anything",
         "gemini": "Type your message"}
Worlds = Callable[..., World]


def open_tui(w: World) -> Pane:
    pane = w.pane("tui", TUI[w.host.name])
    pane.wait_screen(READY[w.host.name], 90)
    return pane


def session_records(w: World, kind: str = "sessions") -> list[Path]:
    folder = w.mailbox / kind / "alice"
    return sorted(folder.iterdir()) if folder.is_dir() else []


def ask(w: World, pane: Pane, prompt: str, *marks: str) -> dict[str, Any]:
    """Type ``prompt``; returns the model request that carried it (and ``marks``)."""
    pane.type(prompt)
    return dict(wait_for(lambda: next((r for r in w.provider.model_requests()
                                       if all(m in request_text(r) for m in (prompt, *marks))
                                       and "Write the title" not in request_text(r)), None),
                         60, f"a model request with {prompt!r}"))


@pytest.mark.parametrize("host", [pytest.param(h, id=f"{h}-{VERSIONS[h]}") for h in TUI])
def test_prompt_shows_mail_that_arrived_mid_session(host: str, world: Worlds) -> None:
    """Check 3b: the prompt hook shows mail that arrived after the session's first
    turn, and only that (what the session was shown before is not repeated)."""
    w = world(host, {"call": None})
    w.install("alice", "--hooks")
    early = w.send("bob", "alice", "early one", "EARLY-BODY")
    pane = open_tui(w)
    first = request_text(ask(w, pane, "Hello there", "EARLY-BODY")).replace("&gt;", ">")
    assert f"[mailslot] message {early}" in first
    wait_for(lambda: pane.wait_screen(READY[host], 30), 30, "the turn to end")
    late = w.send("bob", "alice", "late one", "LATE-BODY")
    text = request_text(ask(w, pane, "Anything new", "LATE-BODY")).replace("&gt;", ">")
    assert "1 message for alice not shown before in this session" in text
    assert f"[mailslot] message {late}" in text and "> LATE-BODY" in text
    assert text.count(f"[mailslot] message {early}") == 1  # the first turn's, not again


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_claude_wake_while_idle_and_no_waiter_left(world: Worlds) -> None:
    """Check 6: with --wake, mail to an idle Claude Code TUI starts a new model request
    showing the notice; /exit leaves no waiter. How fast is measured by bench_rewake and
    bench_claude_peer; the bound here only says the waiter woke it, not a later poll."""
    w = world("claude", {"call": None})
    w.install("alice", "--hooks", "--wake")
    w.set_wake("alice", "claude-rewake")  # the waiter alone (--wake chose claude-peer)
    pane = open_tui(w)
    pane.type("Hello")
    w.provider.wait_for_requests(1, 60)
    record = wait_for(lambda: session_records(w, "waiters"), 60, "the waiter to arm")[0]
    waiter = int(record.read_text())
    count = len(w.provider.model_requests())
    sent_at = time.time()
    sent = w.send("bob", "alice", "wake up", "WAKE-BODY")
    woke = w.provider.wait_for_requests(count + 1, 30)[count]
    assert woke["t"] - sent_at < 10.0
    text = request_text(woke)
    assert f"bob sent message {sent}" in text and "WAKE-BODY" not in text
    assert "Stop hook feedback" in text or "system-reminder" in text, text[-2000:]
    # /exit: Claude Code ends, and so does the next waiter it started after the wake.
    w.provider.wait_for_requests(count + 1, 30)
    waiter = int(wait_for(lambda: [r for r in session_records(w, "waiters")
                                   if int(r.read_text()) != waiter], 60,
                          "the next waiter")[0].read_text())
    pane.type("/exit")
    wait_for(lambda: not pane.alive() or "claude" not in pane.screen().lower()
             or not running(waiter), 30, "Claude Code to exit")
    wait_for(lambda: not running(waiter), 10, "the waiter to leave after /exit")


def test_claude_p_with_wake_exits_as_quickly_as_without(world: Worlds) -> None:
    """Check 6: `claude -p` is not kept alive by the waiter (none runs there)."""
    timings = {}
    for flags in ((), ("--wake",)):
        w = world("claude", {"call": None})
        w.install("alice", "--hooks", *flags)
        w.send("bob", "carol", "so the mailbox exists", "x")
        start = time.monotonic()
        done = w.run("Hello", timeout=90)
        timings[flags] = time.monotonic() - start
        assert done.returncode == 0, done.stderr
        assert session_records(w, "waiters") == []
        assert [p for p in w.processes() if "wait" in Path(f"/proc/{p}/cmdline").read_text()
                ] == []
    assert timings[("--wake",)] < timings[()] + 5, timings


def test_claude_idle_waiter_uses_almost_no_cpu(world: Worlds) -> None:
    """Check 6: a waiter idling beside a Claude Code TUI costs under 5 % of one core."""
    w = world("claude", {"call": None})
    w.install("alice", "--hooks", "--wake")
    w.set_wake("alice", "claude-rewake")  # the waiter alone (--wake chose claude-peer)
    pane = open_tui(w)
    pane.type("Hello")
    record = wait_for(lambda: session_records(w, "waiters"), 60, "the waiter to arm")[0]
    waiter = int(record.read_text())
    before, start = cpu_seconds(waiter), time.monotonic()
    time.sleep(3)
    used = cpu_seconds(waiter) - before
    assert used < 0.05 * (time.monotonic() - start), f"idle waiter used {used:.2f} s CPU"
