"""What recording a hook session costs every hook call, in microseconds.

Every hook call refreshes its host session (one ``utime`` when the record exists) and
asks for the agent's instance mail (one listing of a folder that usually does not
exist); only a new session, or a session start, works out its facts (the host process,
from ``/proc``). Baseline, measured in the same
run: a bare ``os.utime`` of the same file, and the mid-turn decision a hook makes anyway
(:meth:`mailslot.service.delivery.Delivery.plan` in its common case: nothing new).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from common import NotDone, Row
from mailslot import FileStore, Mailbox
from mailslot.access.identity import Identity
from mailslot.frontends.hooks.hook_entry import _facts
from mailslot.service.delivery import MIDTURN, Delivery

ROUNDS = 2000
SESSION = "3f2c9a1e-7b4d-4e8a-9c21-5d6f0a8b7e34"


def _micro(fn: Callable[[], object], done: Callable[[object], bool],
           rounds: int = ROUNDS) -> float:
    """Median microseconds per call, over ``rounds`` calls in batches of 50, once a call
    is seen to do its work (``done`` of what it returns; :class:`NotDone` otherwise)."""
    if not done(found := fn()):
        raise NotDone(f"{fn} did not do its work: it returned {found!r:.200}")
    batches = []
    for _ in range(rounds // 50):
        began = time.perf_counter()
        for _ in range(50):
            fn()
        batches.append((time.perf_counter() - began) / 50)
    return statistics.median(batches) * 1e6


def run() -> list[Row]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "mailbox"
        store = FileStore(root)
        Mailbox(store, Identity("claude", "--agent")).send("gemini", "hi", "x")
        store.record_hook_session("gemini", SESSION, _facts("claude"))
        path = root / "hook-sessions" / "gemini" / SESSION
        delivery = Delivery(store, "gemini", Identity("gemini", "--agent"))
        store.add_shown("gemini", SESSION, [i for i, _ in store.entries("gemini", ("unread",))])

        raw = _micro(lambda: os.utime(path), lambda found: found is None)
        refresh = _micro(lambda: store.refresh_hook_session("gemini", SESSION),
                         lambda found: found is True)  # the record is there
        facts = _micro(lambda: _facts("claude"), lambda found: bool(found))
        listing = _micro(lambda: store.instance_mail("gemini"), lambda found: found == {})
        plan = _micro(lambda: delivery.plan(MIDTURN, SESSION, limit=10_000),
                      lambda found: found is None, rounds=500)  # nothing new: no showing
    added = refresh + listing  # the facts are worked out only for a new session
    return [
        Row("hook session refresh (record exists)", f"{refresh:.1f} µs",
            f"{raw:.1f} µs bare utime", "≤ 3× bare utime", refresh <= 3 * raw),
        Row("hook session facts (/proc, cwd; new sessions only)", f"{facts:.1f} µs", "",
            "", None),
        Row("instance mail lookup (none)", f"{listing:.1f} µs", "", "", None),
        Row("all added per hook call", f"{added:.1f} µs",
            f"{plan:.1f} µs mid-turn decision", "≤ ½ mid-turn decision", added <= plan / 2),
    ]
