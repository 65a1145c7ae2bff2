"""Pi wakes itself: the ``pi`` wake method against the real program, offline.

``mailslot install pi --hooks --wake`` writes the extension with its background waiter
(``mailslot hook pi wait``). An open Pi session that is idle is woken by mail with no
watcher running: its next model request carries mailslot's notice (names and ids only),
and it waits again after that turn. Under ``pi -p`` no waiter runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from . import hosts_more  # noqa: F401  (registers pi in the harness)
from .conftest import VERSIONS
from .harness import World, request_text, wait_for
from .test_tui import running

AGENT = "alice"
PI = VERSIONS.get("pi", "absent")
pytestmark = pytest.mark.skipif(PI == "absent", reason="pi is not installed")
ONCE = [pytest.param(PI, id=f"pi-{PI}")]
Worlds = Callable[..., World]


def _waiters(w: World) -> dict[str, int]:
    """The agent's armed waiters: session -> pid."""
    folder = w.mailbox / "waiters" / AGENT
    found = {}
    for record in folder.iterdir() if folder.is_dir() else ():
        try:
            found[record.name] = int(record.read_text())
        except ValueError:  # being written
            continue
    return found


def _rearmed(w: World, session: str, before: int) -> int:
    """The pid of the session's waiter once one other than ``before`` runs (the record
    of a waiter that woke the session stays until the next one arms)."""
    return int(wait_for(lambda: (pid := _waiters(w).get(session)) not in (None, before)
                        and running(pid) and pid, 60, "the next waiter"))


def _notices(w: World, sent: str) -> list[dict[str, object]]:
    return [r for r in w.provider.model_requests()
            if f"bob sent message {sent}" in request_text(r)]


@pytest.mark.parametrize("version", ONCE)
def test_pi_wakes_an_idle_session_itself(world: Worlds, version: str) -> None:
    w = world("pi", {"call": None})
    installed = w.install(AGENT, "--hooks", "--wake")
    assert 'wake_method "pi"' in installed.stdout, installed.stdout
    pane = w.pane("tui", ["pi", "--provider", "fake", "--model", "gpt-4.1"])
    # The waiter arms at the session's start: no prompt was typed, no watcher runs.
    ((session, first),) = wait_for(lambda: _waiters(w), 90, "the waiter to arm").items()
    assert w.provider.model_requests() == []
    sent_at = time.time()
    sent = w.send("bob", AGENT, "wake up", "WAKE-BODY")
    (woke,) = wait_for(lambda: _notices(w, sent), 60, "the woken turn")
    assert woke["t"] - sent_at < 10
    text = request_text(woke)
    assert f"[mailslot] {AGENT}, you have new mail: bob sent message {sent}." in text
    assert "WAKE-BODY" not in text  # the notice names sender and id only
    assert woke["reply"] == "text"
    # After that turn the session waits again, and the next mail wakes it again.
    armed = _rearmed(w, session, first)
    again = w.send("bob", AGENT, "and again", "AGAIN-BODY")
    (second,) = wait_for(lambda: _notices(w, again), 60, "the second woken turn")
    assert w.provider.model_requests() == [woke, second]  # one turn per mail, no more
    assert "AGAIN-BODY" not in request_text(second)
    # The watcher's own attempt only checks that a waiter runs: it counts as woken.
    waiter = _rearmed(w, session, armed)
    done = w.mailslot("watch", "--once")
    log = (w.mailbox / "log" / "events.jsonl").read_text()
    assert "wake_ok" in log and "wake_failed" not in log, done.stdout + done.stderr
    # Pi's exit ends its waiter.
    pane.keys("C-d")
    wait_for(lambda: not running(waiter), 30, "the waiter to leave with Pi")


@pytest.mark.parametrize("version", ONCE)
def test_pi_p_with_wake_runs_no_waiter(world: Worlds, version: str) -> None:
    """``pi -p`` ends after its prompt: the extension starts no waiter there."""
    w = world("pi", {"call": None})
    assert w.install(AGENT, "--hooks", "--wake").returncode == 0
    w.send("bob", AGENT, "waiting", "x")
    done = w.run("Hello", timeout=90)
    assert done.returncode == 0, done.stderr[-2000:]
    assert _waiters(w) == {}
    assert [p for p in w.processes()
            if b"wait" in Path(f"/proc/{p}/cmdline").read_bytes()] == []
