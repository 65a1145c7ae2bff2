"""Search at 100,000 messages: the index build rate and the search latency.

Rows:

- building the index from the files (``mailslot index --rebuild``): messages per second,
  against reading the same files with the store alone (the rebuild's floor);
- ``finding.search`` in-process (the service: index query, who may read what, loading
  each hit from its file), p50 and p95 over a mix of queries; target p50 <= 50 ms.

The mailbox is filled without fsync and without per-delivery indexing (setup only); the
send row of bench_store.py measures a real send, index update included.
"""

from __future__ import annotations

import os
import random
import statistics
import time
from pathlib import Path
from unittest import mock

from bench_store import _box, _scratch
from common import NotDone, Row, ms, per_second, percentile
from mailslot import FileStore
from mailslot.core.message import STATES, Message
from mailslot.keep import finding

MESSAGES = 100_000
AGENTS = ("gemini", "codex", "claude", "cursor")
QUERIES = ["migration", "deploy*", '"schema change"', "release NOT staging",
           "(database OR cache) friday", "zyzzyva", "importer", "w1234", "w12*", "note"]
FULL = ("migration", "deploy*", '"schema change"', "(database OR cache) friday", "note")
"""Queries of common words: each finds a full page (20), when the search did its work."""


def _vocabulary(rng: random.Random) -> list[str]:
    common = ["schema", "change", "release", "staging", "deploy", "deployment", "database",
              "cache", "friday", "migration", "importer", "review", "tests", "merge"]
    return common + [f"w{n}" for n in range(5000)]


def _fill(root: Path) -> None:
    rng = random.Random(17)
    words = _vocabulary(rng)
    weights = [1.0 / (rank + 1) for rank in range(len(words))]  # Zipf-like
    store = FileStore(root)
    with mock.patch("os.fsync", lambda fd: None), mock.patch("os.fdatasync", lambda fd: None), \
            mock.patch("mailslot.backends.files.unindexed.leave", lambda store, i, places: None):
        for i in range(MESSAGES):
            sender, to = rng.sample(AGENTS, 2)
            text = " ".join(rng.choices(words, weights, k=60))
            message = Message(
                id=f"2026-01-{1 + i // 40_000:02d}_{i % 40_000:06d}.000000_{sender}_to_{to}"
                   f"_{i:08x}",
                date=f"2026-01-{1 + i // 40_000:02d}T12:00:00+00:00",
                sender=sender, to=(to,),
                subject=f"Note {i}: " + " ".join(rng.choices(words, weights, k=5)),
                body=text)
            store.deliver(message, [to])
    os.sync()


def _read_all(root: Path) -> float:
    store = FileStore(root)
    start = time.perf_counter()
    for agent in store.agent_names():
        for message_id, _ in store.entries(agent, STATES):
            store.load(agent, message_id)
    return time.perf_counter() - start


def run() -> list[Row]:
    with _scratch() as root:
        _fill(root)
        read_s = _read_all(root)
        start = time.perf_counter()
        count = FileStore(root).reindex()
        build_s = time.perf_counter() - start
        if count != MESSAGES:
            raise NotDone(f"the rebuild indexed {count} of {MESSAGES} messages")
        build = Row(f"search index build, {count:,} messages (index --rebuild)",
                    per_second(count, build_s),
                    f"reading the files alone {per_second(count, read_s)}",
                    "(informational)", None)
        box = _box(root, "gemini")
        samples = []
        for _ in range(5):
            for query in QUERIES:
                begin = time.perf_counter()
                found = finding.search(box, query, limit=20)
                samples.append(time.perf_counter() - begin)
                if (len(found) != 20 if query in FULL else query == "zyzzyva" and found):
                    raise NotDone(f"search {query!r} found {len(found)}")
        p50 = statistics.median(samples)
        search = Row(f"search, {MESSAGES:,} messages, {len(QUERIES)} queries x5 "
                     "(in-process, p50)", ms(p50),
                     f"p95 {ms(percentile(samples, 95))}, best {ms(min(samples))}",
                     "<= 50 ms", p50 <= 0.050)
        return [build, search]


if __name__ == "__main__":
    from common import print_table

    print_table(run())
