"""``mailslot hook claude session-start`` and ``post-tool-use`` as whole processes,
1,000 messages pending.

``post-tool-use`` runs after every tool call, so it is measured in its common case: the
session was already shown all 1,000 (nothing new; the interval has passed), which must
not parse a message.

Baseline: ``python -c pass`` with the same interpreter, measured in the same run and
interleaved with the hook so that both see the same machine load. The package is
byte-compiled first, as ``pip install`` does: this measures an installed mailslot, not
one recompiled from source at every start (``PYTHONDONTWRITEBYTECODE`` is often set in
development shells).
"""

from __future__ import annotations

import compileall
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from common import ROOT, VENV_BIN, Expect, Row, ms, new_session, timed_run, unlimited
from mailslot import FileStore, Mailbox
from mailslot.access.identity import Identity
from mailslot.backends import open_store
from mailslot.service.delivery import MIDTURN, Delivery
from mailslot.store import Store

PENDING = 1000
ROUNDS = 15
TARGET = 2.5
MIDTURN_TARGET = 2.5

FIXTURES = ROOT / "tests" / "fixtures" / "hosts"
SESSION = "3f2c9a1e-7b4d-4e8a-9c21-5d6f0a8b7e34"  # the post-tool-use fixture's


def _fill(root: Path) -> None:
    unlimited(root)  # five peers sending 1,000 messages: past the loop governor's limits
    start = datetime(2026, 5, 20, 10, 0, tzinfo=UTC)
    for n in range(PENDING):
        when = start + timedelta(seconds=n)
        box = Mailbox(FileStore(root), Identity(f"peer-{n % 5}", "--agent"),
                      clock=lambda when=when: when)
        box.send("gemini", f"Status report {n}", f"Line one of {n}.\nLine two.\n" * 3)


SHOWN = ["Status report 999"]
"""What the session-start hook shows when it did its work: the newest message."""


def _nothing(out: str) -> bool:
    """What the mid-turn hook prints with nothing new: an empty answer (it looked)."""
    return out == "{}"


def _time(argv: list[str], stdin: bytes, cwd: Path, env: dict[str, str],
          shows: Expect = ()) -> float:
    """One whole process, its output read from a pipe as a host reads it (so the hook
    records what it showed, the delivery ladder's receipt included), checked to have
    done its work (a hook that failed says so on stderr only)."""
    return timed_run(argv, shows, quiet=True, input=stdin, cwd=cwd, env=env)


def _past(record: Path) -> None:
    """Date the session's record back beyond any mid-turn interval."""
    os.utime(record, (time.time() - 3600, time.time() - 3600))


def _plan_times(root: Path) -> list[float]:
    """The mid-turn decision alone (config, stat, two listings, the session's record)."""
    delivery = Delivery(open_store(str(root)), "gemini", Identity("gemini", "git"))
    took = []
    for _ in range(ROUNDS * 3):
        _past(root / "sessions" / "gemini" / SESSION)
        began = time.perf_counter()
        assert delivery.plan(MIDTURN, SESSION, limit=10_000) is None
        took.append(time.perf_counter() - began)
    return took


def _with_a_watcher(store: Store, hook: list[str], stdin: bytes, cwd: Path,
                    env: dict[str, str]) -> tuple[list[float], list[float]]:
    """The session-start hook when an agent has a wake: it also probes the watcher's
    lock (held here, as a running watcher holds it), docs/wake.md."""
    from mailslot.mail import watchers

    store.update_config(lambda raw: raw.update(agents={"peer-0": {
        "wake_on_mail": True, "wake_method": "command", "command": ["true"]}}) or True)
    holder = watchers.hold(store, watchers.FOREGROUND)
    assert holder is not None
    bare = [sys.executable, "-c", "pass"]
    hooks, bases = [], []
    try:
        for _ in range(ROUNDS * 3):  # interleaved with its own baseline, as above
            bases.append(_time(bare, b"", cwd, env))
            hooks.append(_time(hook, new_session(stdin), cwd, env, SHOWN))
    finally:
        holder.release()
    return hooks, bases


def run() -> list[Row]:
    compileall.compile_dir(str(ROOT / "src" / "mailslot"), quiet=1)
    stdin = (FIXTURES / "claude-session-start.json").read_bytes()
    after_tool = (FIXTURES / "claude-post-tool-use.json").read_bytes()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "mailbox"
        checkout = Path(tmp) / "gemini"  # identity from the git toplevel, as installed
        (checkout / ".git").mkdir(parents=True)
        _fill(root)
        env = {k: v for k, v in os.environ.items() if k != "MAILSLOT_AGENT"}
        env["MAILSLOT_DIR"] = str(root)
        hook = [str(VENV_BIN / "mailslot"), "hook", "claude", "session-start"]
        midturn = [str(VENV_BIN / "mailslot"), "hook", "claude", "post-tool-use"]
        bare = [sys.executable, "-c", "pass"]
        out = subprocess.run(midturn, input=after_tool, capture_output=True, cwd=checkout,
                             env=env, check=True).stdout
        assert b"Status report" in out, "the mid-turn hook did not show the mail"
        store = open_store(str(root))  # the session has now been shown all of it
        store.add_shown("gemini", SESSION, [i for i, _ in store.entries("gemini", ["unread"])])
        record = root / "sessions" / "gemini" / SESSION
        out = subprocess.run(hook, input=new_session(stdin), capture_output=True,
                             cwd=checkout, env=env, check=True).stdout
        assert b"Status report 999" in out, "the hook did not show the newest message"
        hooks: list[float] = []
        midturns: list[float] = []
        bases: list[float] = []
        for _ in range(ROUNDS):
            for _ in range(3):
                bases.append(_time(bare, b"", checkout, env))
                hooks.append(_time(hook, new_session(stdin), checkout, env, SHOWN))
                _past(record)
                midturns.append(_time(midturn, after_tool, checkout, env, _nothing))
        plans = _plan_times(root)
        waking, waking_bases = _with_a_watcher(store, hook, stdin, checkout, env)
    base = statistics.median(bases)
    planned = statistics.median(plans)
    # Informational: the rule's share of the process (the rest is Python starting).
    rows = [Row(f"mid-turn rule, nothing new, {PENDING:,} pending (in-process)", ms(planned),
                "", "", None)]
    for what, samples, target, baseline in (
            ("session-start", hooks, TARGET, base),
            ("post-tool-use, nothing new", midturns, MIDTURN_TARGET, base),
            ("session-start, a wake set, watcher running", waking, TARGET,
             statistics.median(waking_bases))):
        took = statistics.median(samples)
        ratio = took / baseline
        rows.append(Row(f"hook claude {what}, {PENDING:,} pending (process)",
                        f"{ms(took)} ({ratio:.2f}x)", f"python -c pass {ms(baseline)}",
                        f"<= {target}x", ratio <= target))
    return rows
