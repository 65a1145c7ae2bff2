"""What a durable read and done cost: each is a rename between state folders, and an
acknowledged one survives a power cut because both folders and its receipt in the events
log are synced before it returns, as a send syncs the folders it links into.

Rows (each against a baseline measured in the same run, interleaved to cut noise):

- ``Mailbox.read`` (unread to read) of one message, synced, against the same read with
  every ``fsync`` a no-op (the read as it was before it was made durable);
  informational: the price is the disk's, a tmpfs shows almost none of it.
- ``Mailbox.done`` (read to done) the same way.
- ``Mailbox.send`` with its syncs, for scale.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from unittest import mock

from bench_store import BODY, _box, _scratch
from common import NotDone, Row, ms
from mailslot import FileStore

BATCH = 20
ROUNDS = 15


def _rows(root: Path) -> list[Row]:
    sender, reader = _box(root, "claude"), _box(root, "gemini")
    # Both kinds of read and done work on mail of their own, sent up front; the sends
    # are timed too, for scale (a send syncs its file and each folder it links into).
    started = time.perf_counter()
    mail = {kind: [sender.send("gemini", f"Schema change, part {i}", BODY).id
                   for i in range(BATCH * ROUNDS)] for kind in ("synced", "unsynced")}
    send = (time.perf_counter() - started) / (2 * BATCH * ROUNDS)

    def reads(kind: str) -> Callable[[int], None]:
        def run(round_no: int) -> None:
            for message_id in mail[kind][round_no * BATCH:(round_no + 1) * BATCH]:
                reader.read(message_id)
        return run

    def dones(kind: str) -> Callable[[int], None]:
        def run(round_no: int) -> None:
            reader.done(mail[kind][round_no * BATCH:(round_no + 1) * BATCH])
        return run

    scale = Row(f"send, synced (for scale; mean of {2 * BATCH * ROUNDS})", f"{ms(send)} each",
                "", "(informational)", None)
    rows = [_compare("read (unread to read)", reads), _compare("done (read to done)", dones),
            scale]
    finished = len(FileStore(root).entries("gemini", ["done"]))
    if finished != 2 * BATCH * ROUNDS:  # every timed read and done moved its message
        raise NotDone(f"{finished} of {2 * BATCH * ROUNDS} messages ended done")
    return rows


def _compare(what: str, make: Callable[[str], Callable[[int], None]]) -> Row:
    synced, unsynced = make("synced"), make("unsynced")

    def without_syncs(round_no: int) -> None:
        with mock.patch.object(os, "fsync", lambda fd: None):
            unsynced(round_no)

    spent: dict[str, list[float]] = {"synced": [], "unsynced": []}
    for round_no in range(ROUNDS):
        order = [("synced", synced), ("unsynced", without_syncs)]
        for name, fn in order if round_no % 2 == 0 else order[::-1]:
            start = time.perf_counter()
            fn(round_no)
            spent[name].append((time.perf_counter() - start) / BATCH)
    with_t, without_t = (statistics.median(spent[k]) for k in ("synced", "unsynced"))
    return Row(
        f"{what}, synced (median of {ROUNDS} x {BATCH})",
        f"{ms(with_t)} each ({with_t / without_t:.1f}x)",
        f"no fsync {ms(without_t)} each",
        "(informational)",
        None,
    )


def run() -> list[Row]:
    with _scratch() as root:
        return _rows(root)


if __name__ == "__main__":
    from common import print_table

    print_table(run())
