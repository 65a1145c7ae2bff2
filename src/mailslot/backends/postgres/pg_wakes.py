"""The PostgreSQL store's queues and locks: taking a queued wake (namespace ``wake``:
one ``wakes`` row per entry, claimed by one ``UPDATE`` of the row taken ``FOR UPDATE
SKIP LOCKED``), a queue's per-agent lock (a session advisory lock) and the lock of
starting sessions (an advisory lock on a connection of its own).
"""

from __future__ import annotations

import os
import socket
from typing import Any

import psycopg

from ...store.records import WakeEntry
from .pg_connection import PgConnection

_CLAIM = ("UPDATE wakes w SET claim = %s FROM (SELECT queue, agent, id FROM wakes "
          "WHERE queue = %s AND agent = %s AND id = %s AND claim = '' "
          "FOR UPDATE SKIP LOCKED) q WHERE w.queue = q.queue AND w.agent = q.agent "
          "AND w.id = q.id AND w.claim = '' RETURNING w.attempt, w.not_before")
"""A claim takes the queued row under ``FOR UPDATE SKIP LOCKED``: a watcher that finds
another one claiming it goes on at once with nothing (that one has it), instead of
waiting for the other's commit to learn the same; of two, exactly one gets the row
either way."""


def take(store: PgConnection, key: tuple[str, ...]
         ) -> tuple[tuple[str, ...], WakeEntry] | None:
    """Claim the queued entry at ``key`` under a token only this process holds (host,
    pid and randomness); ``None`` if another took it first."""
    queue, agent, message_id = key
    token = f"{message_id}.{socket.gethostname()}.{os.getpid()}.{os.urandom(4).hex()}"
    rows = store._rows(f"cannot claim a wake for {agent}", _CLAIM,
                       (token, queue, agent, message_id))
    if not rows:
        return None
    return (*key, token), WakeEntry(message_id, agent, rows[0][0], rows[0][1], token)


class WakeLock:
    """A queue's lock of one agent: a session advisory lock on the store's connection, so
    the database releases it when the holder's connection ends (it died or lost its
    network). Other processes and machines are kept out; within one process the lock is
    shared by its threads (PostgreSQL's advisory locks are re-entrant per connection),
    which the watcher never needs, running at most one pass per agent at a time. The key
    names the queue and the agent (``mailslot wake reviewer``, ``mailslot notify-3
    reviewer``), so a running wake never holds up a notifier, nor one notifier another."""

    def __init__(self, store: PgConnection, agent: str, key: str) -> None:
        self._store, self._agent, self._key = store, agent, key
        self._held = False

    def __enter__(self) -> bool:
        self._held = bool(self._store._rows(
            f"cannot lock {self._agent}'s wakes",
            "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", (self._key,))[0][0])
        return self._held

    def __exit__(self, *exc: object) -> None:
        if self._held:
            self._store._rows(f"cannot unlock {self._agent}'s wakes",
                              "SELECT pg_advisory_unlock(hashtextextended(%s, 0))",
                              (self._key,))


class LaunchLock:
    """The lock of starting sessions: a session advisory lock taken, waiting, on a connection
    of its own, closed on exit. Its own: an advisory lock is re-entrant on the store's
    shared connection (threads would not exclude each other), and waiting there would
    hold up every other call of this process. The database releases it if the holder's
    connection ends (it died or lost its network)."""

    _KEY = "mailslot launch"

    def __init__(self, store: PgConnection) -> None:
        self._store = store
        self._conn: psycopg.Connection[Any] | None = None

    def __enter__(self) -> bool:
        try:
            self._conn = psycopg.connect(self._store.url, autocommit=True, connect_timeout=5)
            self._conn.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))",
                               (self._KEY,))
        except psycopg.Error as exc:
            if self._conn is not None:
                self._conn.close()
            raise self._store._error(exc, "cannot lock the session log") from None
        return True  # waited for: always held

    def __exit__(self, *exc: object) -> None:
        if self._conn is not None:
            self._conn.close()  # ends the session: the lock goes with it
