"""The file store's costs where a user feels them: send with fsync, and the inbox.

Rows (each against a baseline measured in the same run, interleaved to cut noise):

- ``Mailbox.send`` with fsync against a raw loop on the same folder doing only what
  durability needs, with the calls mailslot makes (tmp write + ``fdatasync`` + link +
  folder ``fsync`` + unlink); target >= 0.7x.
- the inbox's first page (20) with 10,000 unread messages, in-process; target <= 20 ms.
- ``mailslot inbox`` as a whole process with 10,000 unread, against ``python -c pass``
  (informational: the price of starting Python is most of it).
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

from common import (
    VENV_BIN,
    Expect,
    NotDone,
    Row,
    expect_stored,
    listed,
    ms,
    per_second,
    timed_run,
    unlimited,
)
from mailslot import FileStore, Mailbox
from mailslot.access.identity import Identity
from mailslot.core.message import Message, to_bytes

SEND_BATCH = 20
SEND_ROUNDS = 25
UNREAD = 10_000
BODY = "A body of a few lines, about the size agents send each other.\n" * 8


@contextmanager
def _scratch() -> Iterator[Path]:
    """A throwaway folder in ``$MAILSLOT_BENCH_DIR`` (default: the system temp folder).

    Point it at the disk your mailbox lives on; on a tmpfs fsync costs nothing and the
    send ratio measures Python overhead alone.
    """
    base = os.environ.get("MAILSLOT_BENCH_DIR")
    folder = Path(tempfile.mkdtemp(prefix="mailslot-bench-", dir=base))
    unlimited(folder)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _box(root: Path, agent: str) -> Mailbox:
    return Mailbox(FileStore(root), Identity(agent, "--agent"))


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_DATASYNC = getattr(os, "fdatasync", os.fsync)
"""What mailslot syncs a new message file with (``backends/files/fs.py``: its data, not
its times; macOS has no ``fdatasync``)."""


def _raw_sender(root: Path, data: bytes) -> Callable[[int], None]:
    """The least a durable, crash-safe delivery can do, as plain system calls: the ones
    mailslot makes."""
    tmp, new = root / "tmp", root / "raw" / "new"
    tmp.mkdir(parents=True, exist_ok=True)
    new.mkdir(parents=True, exist_ok=True)
    counter = iter(range(1 << 30))

    def send(count: int) -> None:
        for _ in range(count):
            n = next(counter)
            staged = tmp / f"raw-{n}"
            fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.write(fd, data)
            _DATASYNC(fd)
            os.close(fd)
            os.link(staged, new / f"raw-{n}.md")
            _fsync_dir(new)
            os.unlink(staged)

    return send


def _send_row(root: Path) -> Row:
    box = _box(root, "claude")
    sample = box.send("gemini", "Warm-up: schema change in the users table", BODY)
    raw = _raw_sender(root, to_bytes(sample))

    def service(count: int) -> None:
        for i in range(count):
            box.send("gemini", f"Schema change in the users table, part {i}", BODY)

    # Alternate which goes first; the median of per-round ratios shrugs off bursts of load.
    totals = {"service": 0.0, "raw": 0.0}
    ratios = []
    for round_no in range(SEND_ROUNDS):
        spent = {}
        order = [("service", service), ("raw", raw)]
        for name, fn in order if round_no % 2 == 0 else order[::-1]:
            start = time.perf_counter()
            fn(SEND_BATCH)
            spent[name] = time.perf_counter() - start
            totals[name] += spent[name]
        ratios.append(spent["raw"] / spent["service"])
    count = SEND_BATCH * SEND_ROUNDS
    expect_stored(root, "gemini", count + 1)  # every timed send stored (and the warm-up)
    if len(os.listdir(root / "raw" / "new")) != count:
        raise NotDone("the raw loop did not link each of its files")
    ratio = statistics.median(ratios)
    return Row(
        f"send with fsync ({count}, interleaved; median ratio)",
        f"{per_second(count, totals['service'])} ({ratio:.2f}x)",
        f"raw loop {per_second(count, totals['raw'])}",
        ">= 0.70x",
        ratio >= 0.7,
    )


def _fill(root: Path, count: int) -> None:
    """``count`` unread messages for gemini, written by the store without fsync (setup only)."""
    store = FileStore(root)
    with mock.patch("os.fsync", lambda fd: None), mock.patch("os.fdatasync", lambda fd: None):
        for i in range(count):
            message = Message(
                id=f"2026-01-01_{i // 1_000_000:06d}.{i % 1_000_000:06d}_claude_to_gemini_"
                f"note-{i}_{i % 0xFFFFFF:06x}",
                date="2026-01-01T12:00:00+00:00",
                sender="claude",
                to=("gemini",),
                subject=f"Note number {i} about the importer",
                body=BODY,
            )
            store.deliver(message, ["gemini"])
    os.sync()


def _inbox_rows(root: Path) -> list[Row]:
    _fill(root, UNREAD)

    def first_page() -> None:
        page = _box(root, "gemini").inbox(limit=20)
        assert len(page) == 20

    samples = []
    for _ in range(40):
        start = time.perf_counter()
        first_page()
        samples.append(time.perf_counter() - start)
    median = statistics.median(samples)
    in_process = Row(
        f"inbox first page, {UNREAD:,} unread (in-process, median of 40)",
        ms(median),
        f"best {ms(min(samples))}",
        "<= 20 ms",
        median <= 0.020,
    )

    env = {**os.environ, "MAILSLOT_DIR": str(root)}
    env.pop("MAILSLOT_AGENT", None)
    cli = [str(VENV_BIN / "mailslot"), "--agent", "gemini", "inbox"]
    bare = [sys.executable, "-c", "pass"]
    times: dict[str, list[float]] = {"cli": [], "bare": []}
    shows: dict[str, Expect] = {"cli": lambda out: listed(out) == 20, "bare": ()}
    for _ in range(15):
        for name, argv in (("cli", cli), ("bare", bare)):
            times[name].append(timed_run(argv, shows[name], env=env))
    cli_t, bare_t = statistics.median(times["cli"]), statistics.median(times["bare"])
    process = Row(
        f"`mailslot inbox` process, {UNREAD:,} unread (median of 15)",
        f"{ms(cli_t)} ({cli_t / bare_t:.1f}x)",
        f"python -c pass {ms(bare_t)}",
        "(informational)",
        None,
    )
    return [in_process, process]


def run() -> list[Row]:
    with _scratch() as send_root, _scratch() as inbox_root:
        return [_send_row(send_root), *_inbox_rows(inbox_root)]


if __name__ == "__main__":
    from common import print_table

    print_table(run())
