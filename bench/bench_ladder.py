"""What the delivery ladder costs where it is felt: its receipts on the hook
and send paths, and reading it back.

- the session-start hook, 1,000 pending, as a whole process: its output read from a
  pipe (as a host reads it: the session's record and the ``surfaced`` receipt are
  written) against the same hook writing to the null device (nothing is recorded),
  interleaved, with ``python -c pass`` beside them;
- in-process: ``Delivery.commit`` of one showing with and without the receipt, and a
  send with and without ``notify_when`` (which adds one header field and nothing else
  at send time), then a recipient's read that sends the one notice;
- ``status`` of a message with its ladder, the events log holding 1,000 sends after it.
"""

from __future__ import annotations

import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from common import (
    ROOT,
    VENV_BIN,
    NotDone,
    Row,
    expect_stored,
    ms,
    new_session,
    timed_run,
    unlimited,
)
from mailslot import FileStore, Mailbox
from mailslot.access.identity import Identity
from mailslot.service.delivery import START, Delivery

PENDING = 1000
ROUNDS = 15
SESSION = "3f2c9a1e-7b4d-4e8a-9c21-5d6f0a8b7e34"
STDIN = (ROOT / "tests" / "fixtures" / "hosts" / "claude-session-start.json").read_bytes()


def _process(argv: list[str], cwd: Path, env: dict[str, str], stdout: int,
             shows: Sequence[str] = ()) -> float:
    """One whole process, checked to have done its work (a hook that failed says so on
    stderr only, and exits 0)."""
    return timed_run(argv, shows, quiet=True, stdout=stdout, input=new_session(STDIN),
                     cwd=cwd, env=env)


def _median(fn: object, rounds: int = ROUNDS * 3) -> float:
    took = []
    for _ in range(rounds):
        began = time.perf_counter()
        fn()  # type: ignore[operator]
        took.append(time.perf_counter() - began)
    return statistics.median(took)


def _hooks(root: Path, checkout: Path) -> list[Row]:
    env = {k: v for k, v in os.environ.items() if k != "MAILSLOT_AGENT"}
    env["MAILSLOT_DIR"] = str(root)
    hook = [str(VENV_BIN / "mailslot"), "hook", "claude", "session-start"]
    bare = [sys.executable, "-c", "pass"]
    piped, dropped, bases = [], [], []
    for _ in range(ROUNDS * 2):
        bases.append(_process(bare, checkout, env, subprocess.DEVNULL))
        piped.append(_process(hook, checkout, env, subprocess.PIPE,
                              [f"Status report {PENDING - 1}"]))
        dropped.append(_process(hook, checkout, env, subprocess.DEVNULL))
    base, took, without = (statistics.median(x) for x in (bases, piped, dropped))
    return [
        Row(f"hook claude session-start, {PENDING:,} pending, ladder recorded (process)",
            f"{ms(took)} ({took / base:.2f}x)", f"python -c pass {ms(base)}", "<= 2.5x",
            took / base <= 2.5),
        Row("  the same, output to the null device (nothing recorded)",
            f"{ms(without)} ({(took - without) * 1000:+.2f} ms for the records)", "", "",
            None),
    ]


def _in_process(root: Path) -> list[Row]:
    store = FileStore(root)
    delivery = Delivery(store, "gemini", Identity("gemini", "--agent"))
    session = json.loads(new_session(STDIN))["session_id"]  # one never shown its mail
    planned = delivery.plan(START, session, limit=10_000)
    assert planned is not None and planned.shown
    with_receipt = _median(lambda: delivery.commit(planned, host="claude"))
    shown_only = _median(lambda: store.add_shown("gemini", session, planned.shown))
    alice = Mailbox(store, Identity("alice", "--agent"))
    plain = _median(lambda: alice.send("bob", "plain", "x"), ROUNDS * 2)
    asking = _median(lambda: alice.send("bob", "asking", "x", notify_when="read"), ROUNDS * 2)
    bob = Mailbox(store, Identity("bob", "--agent"))
    asked = [i.message.id for i in bob.inbox(limit=1000) if i.message.notify_when]
    quiet = [i.message.id for i in bob.inbox(limit=1000) if not i.message.notify_when]
    if len(asked) != ROUNDS * 2 or len(quiet) < len(asked):
        raise NotDone(f"bob holds {len(asked)} asking and {len(quiet)} plain messages")
    marks = iter(asked)
    notices = _median(lambda: bob.mark_read(next(marks)), len(asked))
    others = iter(quiet)
    reads = _median(lambda: bob.mark_read(next(others)), len(asked))
    expect_stored(root, "alice", len(asked))  # one notice for each asking read, no more
    return [
        Row(f"commit of a showing ({len(planned.shown)} messages): record + ladder receipt",
            ms(with_receipt), f"record only {ms(shown_only)}", "", None),
        Row("send, notify_when=read (in-process)", ms(asking), f"plain send {ms(plain)}",
            "", None),
        Row("mark-read that sends the one notice (in-process)", ms(notices),
            f"mark-read, nothing asked {ms(reads)}", "", None),
    ]


def _status(root: Path) -> Row:
    unlimited(root)  # past the loop governor's limits on purpose
    store = FileStore(root)
    alice = Mailbox(store, Identity("alice", "--agent"))
    sent = alice.send("gemini", "watched", "x")
    for n in range(PENDING):
        Mailbox(store, Identity(f"peer-{n % 5}", "--agent")).send("gemini", f"later {n}", "y")
    took = _median(lambda: alice.status(sent.id), ROUNDS)
    if [r.agent for r in alice.status(sent.id).recipients] != ["gemini"]:
        raise NotDone(f"status of {sent.id} did not name its recipient")
    return Row(f"status with its ladder, {PENDING:,} sends logged after it (in-process)",
               ms(took), "", "", None)


def run() -> list[Row]:
    compileall.compile_dir(str(ROOT / "src" / "mailslot"), quiet=1)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "mailbox"
        checkout = Path(tmp) / "gemini"  # identity from the git toplevel, as installed
        (checkout / ".git").mkdir(parents=True)
        unlimited(root)  # past the loop governor's limits on purpose
        for n in range(PENDING):
            Mailbox(FileStore(root), Identity(f"peer-{n % 5}", "--agent")).send(
                "gemini", f"Status report {n}", f"Line one of {n}.\nLine two.\n" * 3)
        rows = _hooks(root, checkout)
        rows += _in_process(root)
        rows.append(_status(Path(tmp) / "status"))
    return rows
