"""The PostgreSQL store's wake queue and notifier queues: one ``wakes`` row per entry,
claimed by one ``UPDATE`` of the row taken ``FOR UPDATE SKIP LOCKED``, under a session
advisory lock per queue and agent.
"""

from __future__ import annotations

import copy
import os
import socket
from typing import Any, Self

import psycopg

from ...store.records import WakeEntry, notify_lane
from .pg_connection import CHANNEL, PgConnection


class PgWakes(PgConnection):
    """The :class:`~mailslot.store.roles.WakeQueues` role on PostgreSQL."""

    _queue = "wake"
    """Which queue the ``wake_*`` methods act on (:meth:`notify_queue`)."""

    # Wake queue ------------------------------------------------------------------------
    # One row per queued wake (claim '') and per claimed one (claim = the taker's token):
    # a claim is one UPDATE of a queued row, so of two watchers exactly one gets it. Each
    # row names its queue: 'wake', or a notifier queue 'notify-N'.
    _ENQUEUE = ("INSERT INTO wakes (queue, agent, id, attempt, not_before) VALUES "
                "(%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING")

    def wake_enqueue(self, entry: WakeEntry) -> bool:
        """Without ``RETURNING``: the sender's role queues the recipient's wake, a row
        row-level security lets it insert but not read back."""
        def work(db: psycopg.Connection[Any]) -> bool:
            with db.transaction():
                added = db.execute(self._ENQUEUE, (self._queue, entry.agent,
                                                   entry.message_id, entry.attempt,
                                                   entry.not_before)).rowcount
                if added:
                    db.execute("SELECT pg_notify(%s, %s)", (CHANNEL, f"wake:{entry.agent}"))
                return bool(added)
        return self._run(f"cannot queue a wake for {entry.agent}", work)  # type: ignore[no-any-return]

    def wake_agents(self) -> list[str]:
        return [r[0] for r in self._rows("cannot read the wake queue",
                                         "SELECT DISTINCT agent FROM wakes WHERE queue = %s "
                                         "ORDER BY agent", (self._queue,))]

    def queued_agents(self) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for queue, agent in self._rows("cannot read the wake queue",
                                       "SELECT DISTINCT queue, agent FROM wakes "
                                       "ORDER BY queue, agent"):
            found.setdefault(queue, []).append(agent)
        return found

    def _wakes(self, agent: str, claimed: bool) -> list[WakeEntry]:
        rows = self._rows(f"cannot read {agent}'s wakes",
                          "SELECT id, attempt, not_before, claim FROM wakes WHERE queue = %s "
                          "AND agent = %s AND (claim <> '') = %s",
                          (self._queue, agent, claimed))
        return [WakeEntry(i, agent, a, nb, c or None) for i, a, nb, c in rows]

    def wake_pending(self, agent: str) -> list[WakeEntry]:
        return self._wakes(agent, claimed=False)

    _CLAIM = ("UPDATE wakes w SET claim = %s FROM (SELECT queue, agent, id FROM wakes "
              "WHERE queue = %s AND agent = %s AND id = %s AND claim = '' "
              "FOR UPDATE SKIP LOCKED) q WHERE w.queue = q.queue AND w.agent = q.agent "
              "AND w.id = q.id AND w.claim = '' RETURNING w.attempt, w.not_before")
    """A claim takes the queued row under ``FOR UPDATE SKIP LOCKED``: a watcher that
    finds another one claiming it goes on at once with nothing (that one has it),
    instead of waiting for the other's commit to learn the same; of two, exactly one
    gets the row either way."""

    def wake_claim(self, entry: WakeEntry) -> WakeEntry | None:
        token = f"{entry.message_id}.{socket.gethostname()}.{os.getpid()}.{os.urandom(4).hex()}"
        rows = self._rows(f"cannot claim a wake for {entry.agent}", self._CLAIM,
                          (token, self._queue, entry.agent, entry.message_id))
        if not rows:
            return None
        return WakeEntry(entry.message_id, entry.agent, rows[0][0], rows[0][1], token)

    def wake_release(self, claimed: WakeEntry, retry: WakeEntry | None = None) -> None:
        if claimed.claim is None:
            raise ValueError("wake_release needs a claimed entry")
        token = claimed.claim

        def work(db: psycopg.Connection[Any]) -> None:
            with db.transaction():
                if retry is not None:
                    db.execute(self._ENQUEUE, (self._queue, retry.agent, retry.message_id,
                                               retry.attempt, retry.not_before))
                    db.execute("SELECT pg_notify(%s, %s)", (CHANNEL, f"wake:{retry.agent}"))
                db.execute("DELETE FROM wakes WHERE queue = %s AND agent = %s AND id = %s "
                           "AND claim = %s", (self._queue, claimed.agent, claimed.message_id,
                                              token))
        self._run(f"cannot release a wake for {claimed.agent}", work)

    def wake_lock(self, agent: str) -> WakeLock:
        return WakeLock(self, agent, f"mailslot {self._queue} {agent}")

    def wake_orphans(self, agent: str) -> list[WakeEntry]:
        return self._wakes(agent, claimed=True)

    # Notifier queues --------------------------------------------------------------
    def notify_queue(self, lane: int) -> Self:
        """A view sharing this store's connection (and its lock)."""
        view = copy.copy(self)
        view._queue = notify_lane(lane)
        return view


class WakeLock:
    """``wake_lock``'s context: a session advisory lock on the store's connection, so
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
