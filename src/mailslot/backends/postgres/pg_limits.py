"""The PostgreSQL store's token buckets (rules in :mod:`mailslot.mail.governor`): one row
per bucket, changed under ``FOR UPDATE``.

A bucket's row is made (empty: full) before it is locked, so two senders that both
find none still queue on one row lock instead of both inserting; rows are locked in key
order, so two takes of the same buckets never deadlock. A bucket taken out of the dict
is emptied back to full rather than deleted, which keeps the row a later lock needs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import psycopg

from ...store.format import check_bucket_group, check_bucket_keys
from .pg_connection import PgConnection


class PgLimits(PgConnection):
    """The :class:`~mailslot.store.roles.Limits` role on PostgreSQL."""

    def update_buckets(self, keys: Sequence[str],
                       change: Callable[[dict[str, tuple[float, float]]], bool]) -> bool:
        check_bucket_keys(keys)
        ordered = sorted(set(keys))

        def work(db: psycopg.Connection[Any]) -> bool:
            with db.transaction():
                db.execute("INSERT INTO buckets (key) SELECT unnest(%s::text[]) "
                           "ON CONFLICT DO NOTHING", (ordered,))
                rows = db.execute("SELECT key, tokens, at FROM buckets WHERE key = ANY(%s) "
                                  "ORDER BY key FOR UPDATE", (ordered,)).fetchall()
                held = {key: (tokens, at) for key, tokens, at in rows if tokens is not None}
                if not change(held):
                    return False
                for key in ordered:
                    tokens, at = held.get(key, (None, None))
                    db.execute("UPDATE buckets SET tokens = %s, at = %s WHERE key = %s",
                               (tokens, at, key))
                return True
        return self._run("cannot update the governor's buckets", work,  # type: ignore[no-any-return]
                         repeat=False)

    def bucket_group(self, group: str) -> dict[str, tuple[float, float]]:
        check_bucket_group(group)
        rows = self._rows("cannot read the governor's buckets",
                          "SELECT key, tokens, at FROM buckets WHERE starts_with(key, %s) "
                          "AND tokens IS NOT NULL", (group + ".",))
        return {key: (tokens, at) for key, tokens, at in rows}
