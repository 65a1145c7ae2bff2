"""The PostgreSQL store's logs (the ``Logs`` primitives): the events log and the session
log, one row per line in ``events`` and ``session_log``, in order of their ``seq``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import psycopg

from ...core.errors import StoreError
from .pg_connection import PgConnection, log_line, log_record

BATCH = 1000
"""A log is read this many rows at a time (the events log can be long)."""
TABLES = {"events": "events", "sessions": "session_log"}
NAMES = {"events": "the events log", "sessions": "the session log"}


class PgEvents(PgConnection):
    """The :class:`~mailslot.store.primitives.Logs` primitives on PostgreSQL."""

    def append_log(self, log: str, record: Mapping[str, Any], *,
                   durable: bool = False) -> None:
        """A line not ``durable`` is committed without waiting for the disk
        (``synchronous_commit`` off for its one transaction), as the file store appends
        it unsynced: a send or a wake does not wait on a flush for its receipt, and a
        server crash can lose only the last moment's receipts, never a message, a
        claim or a queued wake (their own commits wait)."""
        table = _table(log)

        def work(db: psycopg.Connection[Any]) -> None:
            with db.pipeline(), db.transaction():  # one round trip
                if not durable:
                    db.execute("SET LOCAL synchronous_commit TO off")
                db.execute(f"INSERT INTO {table} (record) VALUES (%s)", (log_line(record),))
        self._run(f"cannot add to {NAMES[log]}", work,
                  repeat=False)  # a lost commit may have landed

    def read_log(self, log: str, *, newest_first: bool = False
                 ) -> Iterator[dict[str, Any]]:
        table = _table(log)
        order, compare = ("DESC", "<") if newest_first else ("ASC", ">")
        sql = (f"SELECT seq, record FROM {table} WHERE seq {compare} %s "
               f"ORDER BY seq {order} LIMIT {BATCH}")
        after = 2**62 if newest_first else 0
        while True:
            rows = self._rows(f"cannot read {NAMES[log]}", sql, (after,))
            for seq, line in rows:
                after = seq
                record = log_record(line)
                if record is not None:
                    yield record
            if len(rows) < BATCH:
                return


def _table(log: str) -> str:
    table = TABLES.get(log)
    if table is None:
        raise StoreError(f"no log {log!r} in a mailslot store")
    return table
