"""The file store's concurrency and crash tests, again on PostgreSQL: real processes,
no locks of mailslot's own; every promised message lands exactly once, whole, and a
SIGKILLed writer leaves nothing half-written.

Heavy (about a minute here): run by ``make test-pg`` (and ``.ci/run``), not ``make test``.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from mailslot import Mailbox
from mailslot.backends import open_store
from mailslot.core.message import STATES
from mailslot.keep.transfer import migrate
from mailslot.store import Store
from pgcluster import Cluster
from support import promised, worker
from test_concurrency import RECIPIENTS, SENDERS, send_and_read_at_once
from test_crash import check_file, kill_at_random

pytestmark = pytest.mark.heavy


@pytest.fixture
def url(pg_cluster: Cluster) -> str:
    location = pg_cluster.new_database()
    open_store(location).init()
    return location


def held(store: Store, agent: str) -> dict[str, str]:
    """Every id in ``agent``'s mailbox with its state (the store keeps one row per copy)."""
    found = store.entries(agent, STATES)
    assert len(found) == len({i for i, _ in found})
    return dict(found)


def test_concurrent_senders_and_readers_lose_nothing_and_duplicate_nothing(
        url: str, tmp_path: Path) -> None:
    expected, total = send_and_read_at_once(url, tmp_path)
    store = open_store(url)
    for agent in RECIPIENTS:
        found = held(store, agent)
        assert set(found) == expected[agent]
        assert "done" in found.values()  # the readers worked
        for mid in found:
            message, _ = store.load(agent, mid)
            assert message.id == mid and agent in message.to
    delivered = [e["id"] for e in store.events() if e["event"] == "delivered"]
    assert len(delivered) == len(set(delivered)) == total


def test_killed_writers_leave_only_whole_messages_and_keep_every_promise(
        url: str, tmp_path: Path) -> None:
    rng = random.Random(7)
    store = open_store(url)
    outs = [tmp_path / f"sent-{i}" for i in range(SENDERS)]
    senders = [worker("send", url, f"s{i}", -1, 7 + i, outs[i], *RECIPIENTS, "all")
               for i in range(SENDERS)]
    reader = worker("read", url, "ann", 7, tmp_path / "never")
    for i, proc in enumerate(senders):
        enough = rng.randint(1, 25)
        kill_at_random(proc, rng, lambda out=outs[i], n=enough: len(promised(out)) >= n)
        if i == SENDERS // 2:
            kill_at_random(reader, rng, lambda: set(held(store, "ann").values()) - {"unread"})

    promises = [p for out in outs for p in promised(out)]
    assert len(promises) >= SENDERS
    for mid, to in promises:
        if to == ["all"]:
            assert mid in store.broadcast_ids()
            continue
        for agent in to:
            assert mid in held(store, agent), f"promised {mid} missing for {agent}"
    checked = 0
    export = tmp_path / "export"  # whole messages, checked as files: every byte survived
    migrate(url, str(export))
    boxes = (export / "agents" / a / f for a in RECIPIENTS for f in ("new", "cur", "done"))
    for folder in [export / "broadcast" / "live", *boxes]:
        for path in sorted(folder.glob("*.md")):
            check_file(path)
            checked += 1
    assert checked >= len(promises)
    assert Mailbox(store).doctor().healthy
