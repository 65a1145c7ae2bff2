"""The namespaces of keyed records: each key checked the same way for every backend,
and every backend keeping every namespace."""

from __future__ import annotations

import pytest

from mailslot.core.errors import UnsafePath
from mailslot.store.namespaces import LOCKS, NAMESPACES, QUEUES, namespace
from support import make_message

MID = make_message().id
GOOD = {"config": (), "shown": ("gemini", "s-1"), "marks": ("gemini", "s-1"),
        "seen": ("gemini",),
        "passed": ("+team",), "hook-sessions": ("gemini", "0193-a"),
        "instances": ("gemini", MID), "latest": ("gemini", "codex"), "claims": ("gemini",),
        "waiters": ("gemini", "s.1"), "presence": ("gemini", "host-12-ab"),
        "registry": ("gemini",), "accept": ("gemini",), "members": ("+team", "codex"),
        "requests": ("gemini", "codex"), "fences": ("gemini", "s_1"),
        "limits": ("sends", "claude", "gemini"), "once": ("notify-read-x",),
        "wake": ("notify-7", "gemini", MID), "wake.claimed": ("wake", "gemini", MID,
                                                                f"{MID}.4242"),
        "peers.node": (), "peers.known": ("b",), "peers.links": ("b",),
        "peers.outbox": ("b", MID), "peers.sent": ("claude", MID),
        "peers.received": ("b", "0123456789abcdef"), "peers.progress": ("b",)}


def test_every_namespace_has_a_key_it_accepts_here() -> None:
    assert set(GOOD) == set(NAMESPACES)
    for name, key in GOOD.items():
        assert namespace(name).check(key) == key


@pytest.mark.parametrize("name", sorted(NAMESPACES))
def test_a_part_that_could_lead_elsewhere_is_refused(name: str) -> None:
    key = GOOD[name]
    for at in range(len(key)):
        for bad in ("..", "../etc", "a/b", "", ".hidden", "a\0b"):
            with pytest.raises(UnsafePath):
                namespace(name).check((*key[:at], bad, *key[at + 1:]))
    with pytest.raises(UnsafePath):
        namespace(name).check((*key, "more"))
    if key:
        namespace(name).check(key[:1], prefix=True)  # a prefix is a key's first parts
        with pytest.raises(UnsafePath):
            namespace(name).check(key[:-1] if name != "limits" else key[:1])


def test_queues_and_locks_name_what_the_queues_use() -> None:
    assert QUEUES[0] == "wake" and len(QUEUES) == 9
    assert namespace("wake").label(("wake", "a", MID)) == "wakes"
    assert namespace("wake").label(("notify-0", "a", MID)) == "notices"
    assert LOCKS == {"wake": ("queue", "agent"), "launch": ()}
    with pytest.raises(UnsafePath):
        namespace("elsewhere")


def test_every_backend_keeps_every_namespace() -> None:
    """A namespace added here and forgotten by a backend fails here first."""
    from mailslot.backends.files import record_files

    for name in NAMESPACES:
        assert record_files._where(name) is not None  # else: StoreError
    psycopg = pytest.importorskip("psycopg")
    assert psycopg
    from mailslot.backends.postgres import pg_limits, pg_tables

    assert set(pg_tables.TABLES) | set(pg_limits.KEPT) == set(NAMESPACES)
