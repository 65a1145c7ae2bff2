"""``doctor`` at 10,000 and 100,000 messages, and header reads of files that never end
their header (2, 8 and 50 MB), in-process.

- ``doctor`` checks permissions and links from ``lstat`` alone: target <= 0.5 s at
  10,000 messages; at 100,000 it must stay in proportion (informational).
  ``doctor --deep`` reads every message (informational).
- ``inbox`` with one file of 2/8/50 MB whose ``---`` never closes: a header read stops at
  64 KiB, so it costs the same at every size (it once took 0.7 s, 11 s and over 30 s).
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

from common import NotDone, Row, ms
from mailslot import FileStore, Mailbox
from mailslot.access.identity import Identity
from mailslot.core.ids import new_id
from mailslot.core.message import Message, to_bytes
from mailslot.core.results import DoctorReport, Page

DOCTOR_TARGET = 0.5
INBOX_TARGET = 0.05


def _fill(root: Path, count: int) -> None:
    """``count`` messages written straight into place (no fsync: this measures reading)."""
    FileStore(root).deliver(_message(0), ["gemini"])  # the folders, made as mailslot does
    folder = root / "agents" / "gemini" / "new"
    for n in range(1, count):
        message = _message(n)
        path = folder / f"{message.id}.md"
        path.write_bytes(to_bytes(message))
        path.chmod(0o600)


def _message(n: int) -> Message:
    when = datetime(2026, 5, 20, tzinfo=UTC) + timedelta(seconds=n)
    return Message(new_id(when, "claude", ["gemini"]), when.isoformat(), "claude",
                   ("gemini",), f"report {n}", "A few lines.\n" * 5)


def _timed(fn: Callable[[], object], done: Callable[[Any], bool]) -> float:
    """Seconds ``fn`` took; :class:`NotDone` unless what it returned shows ``done``."""
    began = time.perf_counter()
    found = fn()
    took = time.perf_counter() - began
    if not done(found):
        raise NotDone(f"{getattr(fn, '__name__', fn)} did not do its work: {found!r:.300}")
    return took


def _healthy(report: DoctorReport) -> bool:
    return report.healthy


def _page(page: Page) -> bool:
    """A full first page of the readable mail, the endless file read and counted as
    unreadable."""
    return len(page) == 20 and page.unreadable == 1 and \
        all(i.message.subject.startswith("report ") for i in page)


def run() -> list[Row]:
    rows: list[Row] = []
    for count in (10_000, 100_000):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "mailbox"
            _fill(root, count)
            box = Mailbox(FileStore(root), None)
            took = min(_timed(box.doctor, _healthy) for _ in range(3))
            ok = took <= DOCTOR_TARGET if count == 10_000 else None
            rows.append(Row(f"doctor, {count:,} messages", ms(took), "-",
                            f"<= {DOCTOR_TARGET} s" if ok is not None else "-", ok))
            if count == 10_000:
                deep = _timed(partial(box.doctor, deep=True), _healthy)
                rows.append(Row(f"doctor --deep, {count:,} messages", ms(deep), "-", "-",
                                None))
    for megabytes in (2, 8, 50):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "mailbox"
            _fill(root, 20)
            endless = _message(10**6)
            path = root / "agents" / "gemini" / "new" / f"{endless.id}.md"
            with path.open("wb") as out:
                out.write(b"---\nid: x\n")
                out.truncate(megabytes << 20)  # sparse zeros: no closing line, ever
            os.chmod(path, 0o600)
            box = Mailbox(FileStore(root), Identity("gemini", "--agent"))
            took = min(_timed(box.inbox, _page) for _ in range(3))
            rows.append(Row(f"inbox with a {megabytes} MB header that never ends", ms(took),
                            "-", f"<= {ms(INBOX_TARGET)}", took <= INBOX_TARGET))
    return rows
