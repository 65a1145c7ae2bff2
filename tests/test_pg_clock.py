"""Times that decide use the database's clock: a wake's ``not_before`` and a
presence heartbeat's staleness agree between machines whose clocks are three hours
apart. Each "machine" is a store opened while this process's clock is set off by its
skew (``time.time`` moved, as a machine with a wrong clock would read it)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from mailslot import Mailbox
from mailslot.access.identity import Identity
from mailslot.backends import open_store
from mailslot.core.values import replace
from mailslot.mail.presence import Beacon, now_of, summarize
from mailslot.store import Store, WakeEntry
from mailslot.wake.claims import Queue
from mailslot.wake.runner import WakeRunner
from pgcluster import Cluster
from support import put_config
from wake_helpers import calls, fake_host

HOURS = 3600.0
REAL = time.time


@pytest.fixture
def url(pg_cluster: Cluster) -> str:
    return pg_cluster.new_database()


@pytest.fixture
def machine(url: str, monkeypatch: pytest.MonkeyPatch) -> Callable[[float], Store]:
    """``machine(skew)``: from now on this process's clock is ``skew`` seconds off, and
    a store opened on it is that machine's."""
    def on(skew: float) -> Store:
        monkeypatch.setattr(time, "time", lambda: REAL() + skew)
        return open_store(url)
    return on


def configure(store: Store, bin_dir: Path) -> Path:
    record = fake_host(bin_dir, "notify")
    put_config(store, {"owner": "sarah", "agents": {"gemini": {
        "wake_on_mail": True, "wake_method": "command",
        "command": [str(bin_dir / "notify"), "{id}"]}}})
    return record


def test_a_wake_queued_on_a_fast_machine_is_due_at_once_on_a_slow_one(
        machine: Callable[[float], Store], bin_dir: Path) -> None:
    fast = machine(+3 * HOURS)
    record = configure(fast, bin_dir)
    sent = Mailbox(fast, Identity("claude", "--agent")).send("gemini", "s", "x", wake=True)
    slow = machine(-3 * HOURS)
    WakeRunner(slow).run_agent("gemini")
    assert [c["argv"] for c in calls(record)] == [[sent.id]]
    assert not Queue(slow).agents()


def test_a_retry_set_for_later_on_a_slow_machine_is_not_run_early_on_a_fast_one(
        machine: Callable[[float], Store], bin_dir: Path) -> None:
    slow = machine(-3 * HOURS)
    record = configure(slow, bin_dir)
    sent = Mailbox(slow, Identity("claude", "--agent")).send("gemini", "s", "x", wake=True)
    claimed = Queue(slow).claim(WakeEntry(sent.id, "gemini"))  # a first attempt failed
    assert claimed is not None
    Queue(slow).release(claimed, replace(claimed, claim=None, attempt=2,
                                       not_before=slow.clock() + 600))
    fast = machine(+3 * HOURS)
    done = WakeRunner(fast).run_agent("gemini")
    assert calls(record) == []  # ten minutes from now by the database, not six hours ago
    assert done.next_due is not None and done.next_due > fast.clock() + 60
    assert [e.message_id for e in Queue(fast).pending("gemini")] == [sent.id]


@pytest.mark.parametrize("writer, reader", [(+3, -3), (-3, +3)])
def test_a_server_on_a_machine_with_a_wrong_clock_is_online_from_every_other(
        machine: Callable[[float], Store], writer: int, reader: int) -> None:
    Beacon(machine(writer * HOURS), "gemini").announce()
    other = machine(reader * HOURS)
    seen = summarize(other.presence(), now_of(other), host="another-machine")["gemini"]
    assert seen.online


def test_the_database_clock_is_read_once_then_kept(
        machine: Callable[[float], Store]) -> None:
    """An offset measured once: asking the time again costs no round trip."""
    store = machine(+3 * HOURS)
    first = store.clock()
    assert abs(first - REAL()) < 60  # the database's time, not this machine's
    store.close()  # no connection: the kept offset answers
    assert abs(store.clock() - REAL()) < 60


def test_a_round_trip_that_stalled_does_not_set_the_offset(
        url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a loaded machine one round trip can stall; measured from it alone, the offset
    was half the stall off, and a watcher saw every new wake as due that much later."""
    store = open_store(url)
    store.load_config()  # connected
    reads = [0]

    def stalled_once() -> float:
        reads[0] += 1
        return REAL() - (60.0 if reads[0] == 1 else 0.0)  # the first query took a minute
    monkeypatch.setattr(time, "time", stalled_once)
    offset = store.clock() - REAL()
    assert abs(offset) < 10  # one round trip alone would have said about 30 s


def test_an_offset_from_a_slow_round_trip_is_measured_again(
        url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every round trip of a measure can stall on a loaded machine (the process itself
    waited for a core): such an offset is measured again a little later, and the
    better one kept."""
    store = open_store(url)
    store.load_config()  # connected
    reads = [0]

    def stalled_at_first() -> float:
        reads[0] += 1
        return REAL() - (60.0 if reads[0] <= 6 and reads[0] % 2 else 0.0)
    monkeypatch.setattr(time, "time", stalled_at_first)
    assert abs(store.clock() - REAL() - 30) < 10  # all three round trips stalled
    store._link.tried_at -= 3600  # type: ignore[attr-defined]  # a while later
    assert abs(store.clock() - REAL()) < 10
