"""Notifications at team scale, on a real server: a watcher sleeps through the wakes of
agents that live on other machines, and wake claims skip a row another claim holds."""

from __future__ import annotations

import io
import threading

import psycopg
import pytest

from mailslot.backends import open_store
from mailslot.frontends.watcher import Watcher
from mailslot.store import WakeEntry
from mailslot.wake.claims import Queue
from pgcluster import Cluster


@pytest.fixture
def url(pg_cluster: Cluster) -> str:
    return pg_cluster.new_database()


def test_a_wake_watch_kicks_only_for_the_agents_it_accepts(url: str) -> None:
    store = open_store(url)
    kicks: list[int] = []
    kicked = threading.Event()

    def kick() -> None:
        kicks.append(1)
        kicked.set()

    watching = store.watch(kick, wakes=lambda agent: agent == "mine")
    try:
        Queue(store).enqueue(WakeEntry("2026-01-01_000000.000001_a_to_theirs_00000001",
                                     "theirs", 1, 0.0))
        Queue(store).enqueue(WakeEntry("2026-01-01_000000.000002_a_to_mine_00000002",
                                     "mine", 1, 0.0))
        assert kicked.wait(60)  # notifications come in commit order: theirs was first
        assert kicks == [1]
    finally:
        watching.close()
        store.close()


def test_a_watcher_looks_at_wakes_of_agents_whose_host_is_here_or_unknown(
        url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAILSLOT_HOST", "m1")
    store = open_store(url)
    store.update_config(lambda raw: raw.update(agents={
        "here": {"host": "m1"}, "there": {"host": "m2"}, "odd": {"host": 5},
        "roaming": {}}) or True)
    watcher = Watcher(store, io.StringIO())
    try:
        assert [a for a in ("here", "there", "odd", "roaming", "unknown")
                if watcher.may_wake_here(a)] == ["here", "roaming", "unknown"]
    finally:
        watcher.close()
        store.close()


def test_a_claim_skips_a_row_another_claim_holds_instead_of_waiting(url: str) -> None:
    store = open_store(url)
    entry = WakeEntry("2026-01-01_000000.000003_a_to_b_00000003", "b", 1, 0.0)
    Queue(store).enqueue(entry)
    with psycopg.connect(url) as other:  # another watcher, mid-claim
        other.execute("SELECT FROM wakes WHERE agent = 'b' FOR UPDATE")
        assert Queue(store).claim(entry) is None  # at once, not after the other's commit
    claimed = Queue(store).claim(entry)
    assert claimed is not None and claimed.claim
    assert Queue(store).claim(entry) is None  # and only once
    store.close()
