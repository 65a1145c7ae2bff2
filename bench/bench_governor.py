"""What the loop governor adds to a send (docs/security.md, "The loop governor").

Rows (each against a baseline measured in the same run, interleaved to cut noise):

- ``Mailbox.send`` with the governor's buckets (the defaults' shape, limits raised so no
  send is refused: a pair and an agent bucket read and replaced under their lock),
  against the same send with every limit ``null`` (no bucket touched);
- ``Mailbox.reply`` 39 messages deep in a reply chain (the hop limit reads up to 39
  headers back), against a reply to a fresh message.

Informational: the price is one lock and two small files per send; the disk's fsyncs of
the send itself dominate.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path

from bench_store import BODY, _box, _scratch
from common import Row, expect_stored, ms, stored
from mailslot import FileStore, Mailbox
from mailslot.core.message import Message

BATCH = 20
ROUNDS = 12
_HIGH = 10**9  # an hour's limit no bench reaches: every bucket is taken from, none empty
_ON = {"pair_sends_per_hour": _HIGH, "agent_sends_per_hour": _HIGH,
       "pair_wakes_per_hour": _HIGH, "agent_wakes_per_hour": _HIGH, "hop_limit": 1000}
_OFF = dict.fromkeys(_ON)


def _configure(root: Path, governor: dict[str, object]) -> None:
    def change(raw: dict[str, object]) -> bool:
        raw.update({"owner": "sarah", "governor": governor})
        return True

    FileStore(root).update_config(change)


def _interleaved(one: Callable[[int], None], other: Callable[[int], None]
                 ) -> tuple[float, float]:
    spent: tuple[list[float], list[float]] = ([], [])
    for round_no in range(ROUNDS):
        order = [(0, one), (1, other)]
        for slot, fn in order if round_no % 2 == 0 else order[::-1]:
            start = time.perf_counter()
            fn(round_no)
            spent[slot].append((time.perf_counter() - start) / BATCH)
    return statistics.median(spent[0]), statistics.median(spent[1])


def _sends(on: Path, off: Path) -> Row:
    _configure(on, _ON)
    _configure(off, _OFF)
    boxes = {root: _box(root, "claude") for root in (on, off)}

    def sending(root: Path) -> Callable[[int], None]:
        def run(round_no: int) -> None:
            for i in range(BATCH):
                boxes[root].send("gemini", f"Schema change, part {i}", BODY, new=True)
        return run

    with_t, without_t = _interleaved(sending(on), sending(off))
    for root in (on, off):
        expect_stored(root, "gemini", ROUNDS * BATCH)
    return Row(f"send with the governor's buckets (median of {ROUNDS} x {BATCH})",
               f"{ms(with_t)} each (+{ms(with_t - without_t)})",
               f"every limit null {ms(without_t)} each", "(informational)", None)


def _replies(root: Path) -> Row:
    _configure(root, _ON)
    claude, gemini = _box(root, "claude"), _box(root, "gemini")
    deep = claude.send("gemini", "Review", BODY, new=True)
    for hop in range(37):  # a chain 38 long: a reply to its last is its 39th
        deep = (gemini if hop % 2 == 0 else claude).reply(deep.id, "again")
    fresh = claude.send("gemini", "Review", BODY)
    answer = gemini if deep.sender == "claude" else claude

    def replying(message: Message, box: Mailbox) -> Callable[[int], None]:
        def run(round_no: int) -> None:
            for _ in range(BATCH):  # answering one message again and again
                box.reply(message.id, "ok")
        return run

    before = {name: stored(root, name) for name in ("claude", "gemini")}
    with_t, without_t = _interleaved(replying(deep, answer), replying(fresh, gemini))
    for name in ("claude", "gemini"):  # each got its answers (none refused by the hops)
        expect_stored(root, name, before[name] + ROUNDS * BATCH)
    return Row(f"reply 39 deep in a reply chain (median of {ROUNDS} x {BATCH})",
               f"{ms(with_t)} each (+{ms(with_t - without_t)})",
               f"reply to a new message {ms(without_t)} each", "(informational)", None)


def run() -> list[Row]:
    with _scratch() as on, _scratch() as off, _scratch() as chains:
        return [_sends(on, off), _replies(chains)]


if __name__ == "__main__":
    from common import print_table

    print_table(run())
