"""The PostgreSQL store's config, events log and session log: the config one JSON row
changed under ``FOR UPDATE``, each log one row per line, in order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import psycopg

from ...store.format import check_once_key
from .pg_connection import PgConnection, json_object, json_text, log_line, log_record

BATCH = 1000
"""Events are read this many at a time (the log can be long)."""


class PgEvents(PgConnection):
    """The :class:`~mailslot.store.roles.ConfigAndEvents` and
    :class:`~mailslot.store.roles.SessionLog` roles on PostgreSQL."""

    def append_event(self, event: Mapping[str, Any], *, durable: bool = False) -> None:
        """A receipt not ``durable`` is committed without waiting for the disk
        (``synchronous_commit`` off for its one transaction), as the file store appends
        it unsynced: a send or a wake does not wait on a flush for its receipt, and a
        server crash can lose only the last moment's receipts, never a message, a
        claim or a queued wake (their own commits wait)."""
        def work(db: psycopg.Connection[Any]) -> None:
            with db.pipeline(), db.transaction():  # one round trip
                if not durable:
                    db.execute("SET LOCAL synchronous_commit TO off")
                db.execute("INSERT INTO events (record) VALUES (%s)", (log_line(event),))
        self._run("cannot add to the events log", work,
                  repeat=False)  # a lost commit may have landed

    def events(self, *, newest_first: bool = False) -> Iterator[dict[str, Any]]:
        order, compare = ("DESC", "<") if newest_first else ("ASC", ">")
        sql = (f"SELECT seq, record FROM events WHERE seq {compare} %s "
               f"ORDER BY seq {order} LIMIT {BATCH}")
        after = 2**62 if newest_first else 0
        while True:
            rows = self._rows("cannot read the events log", sql, (after,))
            for seq, line in rows:
                after = seq
                record = log_record(line)
                if record is not None:
                    yield record
            if len(rows) < BATCH:
                return

    def mark_once(self, key: str) -> bool:
        rows = self._rows("cannot mark " + check_once_key(key), "INSERT INTO once (key) "
                          "VALUES (%s) ON CONFLICT DO NOTHING RETURNING key", (key,),
                          repeat=False)
        return bool(rows)

    def load_config(self) -> dict[str, Any]:
        rows = self._rows("cannot read the config", "SELECT data FROM config")
        return json_object(rows[0][0]) if rows else {}

    def update_config(self, change: Callable[[dict[str, Any]], bool]) -> bool:
        def work(db: psycopg.Connection[Any]) -> bool:
            with db.transaction():
                db.execute("INSERT INTO config (data) VALUES ('{}') ON CONFLICT DO NOTHING")
                row = db.execute("SELECT data FROM config FOR UPDATE").fetchone()
                config = json_object(row[0] if row else "{}")
                changed = change(config)
                if changed:
                    db.execute("UPDATE config SET data = %s", (json_text(config),))
                return changed
        return self._run("cannot save the config", work)  # type: ignore[no-any-return]

    # The session log (rules in mailslot.launch.starting) -------------------------------------
    def log_session(self, record: Mapping[str, Any]) -> None:
        """One row, committed before returning (the file store's ``sessions.jsonl``)."""
        self._do("cannot add to the session log",
                 "INSERT INTO session_log (record) VALUES (%s)", (log_line(record),),
                 repeat=False)  # a lost commit may have landed

    def launch_lock(self) -> LaunchLock:
        return LaunchLock(self)

    def started_sessions(self) -> list[dict[str, Any]]:
        rows = self._rows("cannot read the session log",
                          "SELECT record FROM session_log ORDER BY seq")
        return [r for r in (log_record(line) for (line,) in rows) if r is not None]


class LaunchLock:
    """``launch_lock``'s context: a session advisory lock taken, waiting, on a connection
    of its own, closed on exit. Its own: an advisory lock is re-entrant on the store's
    shared connection (threads would not exclude each other), and waiting there would
    hold up every other call of this process. The database releases it if the holder's
    connection ends (it died or lost its network)."""

    _KEY = "mailslot launch"

    def __init__(self, store: PgConnection) -> None:
        self._store = store
        self._conn: psycopg.Connection[Any] | None = None

    def __enter__(self) -> None:
        try:
            self._conn = psycopg.connect(self._store.url, autocommit=True, connect_timeout=5)
            self._conn.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))",
                               (self._KEY,))
        except psycopg.Error as exc:
            if self._conn is not None:
                self._conn.close()
            raise self._store._error(exc, "cannot lock the session log") from None

    def __exit__(self, *exc: object) -> None:
        if self._conn is not None:
            self._conn.close()  # ends the session: the lock goes with it
