"""Keep and find: what the search index costs a send, and backup and restore
against a plain ``tar`` of the same folder.

Rows (each against a baseline measured in the same run, interleaved to cut noise):

- ``Mailbox.send`` with fsync, the index step included (a line
  appended to ``index/new.log``; the next search indexes), against the same send with the index step
  left out (``unindexed.leave`` a no-op); target >= 0.80x, i.e. the index adds at most
  a quarter to a send.
- ``mailslot backup`` of a mailbox of ``KEEP`` messages (in-process) against
  ``tar czf`` of its folder (informational: a backup reads through the store, checks
  that every delivery is whole and writes a manifest of checksums).
- ``mailslot restore`` of that backup into an empty folder against ``tar xzf``
  (informational: a restore checks every checksum first and writes every message
  durably, with fsync, as a delivery does).
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import time
from pathlib import Path
from unittest import mock

from bench_store import BODY, _box, _fill, _scratch
from common import NotDone, Row, expect_stored, ms, per_second, stored
from mailslot import FileStore
from mailslot.backends.files import unindexed
from mailslot.keep.backup import Summary, backup, restore

SEND_BATCH = 20
SEND_ROUNDS = 25
KEEP = 5_000


def _index_row(root: Path) -> Row:
    box = _box(root, "claude")
    box.send("gemini", "Warm-up: schema change in the users table", BODY)

    def send(count: int) -> None:
        for i in range(count):
            box.send("gemini", f"Schema change in the users table, part {i}", BODY)

    def without_index(count: int) -> None:
        with mock.patch.object(unindexed, "leave", lambda store, message_id, places: None):
            send(count)

    totals = {"with": 0.0, "without": 0.0}
    ratios = []
    for round_no in range(SEND_ROUNDS):
        spent = {}
        order = [("with", send), ("without", without_index)]
        for name, fn in order if round_no % 2 == 0 else order[::-1]:
            start = time.perf_counter()
            fn(SEND_BATCH)
            spent[name] = time.perf_counter() - start
            totals[name] += spent[name]
        ratios.append(spent["without"] / spent["with"])
    count = SEND_BATCH * SEND_ROUNDS
    expect_stored(root, "gemini", 1 + 2 * count)  # every send stored, both ways,
    if unindexed.waiting(FileStore(root)) != 1 + count:  # and noted for the index once each
        raise NotDone("the sends with the index step did not each note their message")
    ratio = statistics.median(ratios)
    extra = (totals["with"] - totals["without"]) / count
    return Row(
        f"send with the index step ({count}, interleaved; median ratio)",
        f"{per_second(count, totals['with'])} ({ratio:.2f}x; index {ms(extra)}/send)",
        f"without it {per_second(count, totals['without'])}",
        ">= 0.80x",
        ratio >= 0.80,
    )


def _keep_rows(root: Path) -> list[Row]:
    mailbox = root / "mailbox"
    _fill(mailbox, KEEP)
    FileStore(mailbox).reindex()
    out = root / "mail.tar.gz"
    start = time.perf_counter()
    summary: Summary = backup(FileStore(mailbox), str(out))
    took = time.perf_counter() - start
    start = time.perf_counter()
    subprocess.run(["tar", "czf", str(root / "plain.tar.gz"), "-C", str(mailbox), "."],
                   check=True)
    tar_took = time.perf_counter() - start
    target = root / "restored"
    start = time.perf_counter()
    placed = restore(str(out), str(target))
    back = time.perf_counter() - start
    if summary.counts["messages"] != KEEP or placed.counts["messages"] != KEEP \
            or stored(target, "gemini") != KEEP:
        raise NotDone(f"backup held {summary.counts['messages']} messages, restore placed "
                      f"{placed.counts['messages']} of {KEEP}")
    untar = root / "untar"
    untar.mkdir()
    start = time.perf_counter()
    subprocess.run(["tar", "xzf", str(root / "plain.tar.gz"), "-C", str(untar)], check=True)
    untar_took = time.perf_counter() - start
    expect_stored(untar, "gemini", KEEP)  # the baseline did the same work
    shutil.rmtree(target, ignore_errors=True)
    messages = summary.counts["messages"]
    return [
        Row(f"backup of {messages:,} messages (in-process)", per_second(messages, took),
            f"tar czf {per_second(messages, tar_took)}", "-", None),
        Row(f"restore of {messages:,} messages into an empty folder",
            per_second(messages, back), f"tar xzf {per_second(messages, untar_took)}",
            "-", None),
    ]


def run() -> list[Row]:
    rows = []
    with _scratch() as root:
        rows.append(_index_row(root))
    with _scratch() as root:
        rows.extend(_keep_rows(root))
    return rows
