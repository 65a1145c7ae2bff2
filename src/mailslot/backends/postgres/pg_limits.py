"""The PostgreSQL store's records changed under a row lock: the governor's token
buckets (namespace ``limits``, rules in :mod:`mailslot.mail.governor`) and the config.

A bucket is one ``buckets`` row, its key the key's parts joined by dots. Its row is
made (empty: full) before it is locked, so two senders that both find none still queue
on one row lock instead of both inserting; rows are locked in key order, so two takes of
the same buckets never deadlock. A bucket taken out of the dict is emptied back to full
rather than deleted, which keeps the row a later lock needs. The config is the one row
of ``config``, read and rewritten under ``FOR UPDATE``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import psycopg

from ...core.errors import StoreError
from .pg_connection import PgConnection, json_object, json_text

KEPT = ("limits", "config")
"""The namespaces kept here rather than as a table of their own rows."""
Key = tuple[str, ...]


def get(store: PgConnection, space: str, key: Key) -> Any:
    if space == "config":
        rows = store._rows("cannot read the config", "SELECT data FROM config")
        return json_object(rows[0][0]) if rows else None
    return items(store, space, key).get(key)


def items(store: PgConnection, space: str, prefix: Key) -> dict[Key, Any]:
    """The stored buckets whose key starts with ``prefix`` (a reading: no lock)."""
    if space == "config":
        config = get(store, space, ())
        return {} if config is None else {(): config}
    joined = ".".join(prefix)
    rows = store._rows("cannot read the governor's buckets",
                       "SELECT key, tokens, at FROM buckets WHERE (%s = '' OR key = %s OR "
                       "starts_with(key, %s)) AND tokens IS NOT NULL ORDER BY key",
                       (joined, joined, joined + "."))
    return {tuple(key.split(".")): (tokens, at) for key, tokens, at in rows}


def update(store: PgConnection, space: str, keys: Sequence[Key],
           change: Callable[[dict[Key, Any]], bool]) -> bool:
    if space == "config":
        if list(keys) != [()]:
            raise StoreError("the config is one record, key ()")
        return store._run("cannot save the config",  # type: ignore[no-any-return]
                          lambda db: _config(db, change))
    ordered = sorted({".".join(key) for key in keys})

    def work(db: psycopg.Connection[Any]) -> bool:
        with db.transaction():
            db.execute("INSERT INTO buckets (key) SELECT unnest(%s::text[]) "
                       "ON CONFLICT DO NOTHING", (ordered,))
            rows = db.execute("SELECT key, tokens, at FROM buckets WHERE key = ANY(%s) "
                              "ORDER BY key FOR UPDATE", (ordered,)).fetchall()
            held = {tuple(key.split(".")): (tokens, at) for key, tokens, at in rows
                    if tokens is not None}
            if not change(held):
                return False
            for key in ordered:
                tokens, at = held.get(tuple(key.split(".")), (None, None))
                db.execute("UPDATE buckets SET tokens = %s, at = %s WHERE key = %s",
                           (tokens, at, key))
            return True
    return store._run("cannot update the governor's buckets", work,  # type: ignore[no-any-return]
                      repeat=False)


def _config(db: psycopg.Connection[Any], change: Callable[[dict[Key, Any]], bool]) -> bool:
    with db.transaction():
        db.execute("INSERT INTO config (data) VALUES ('{}') ON CONFLICT DO NOTHING")
        row = db.execute("SELECT data FROM config FOR UPDATE").fetchone()
        held: dict[Key, Any] = {(): json_object(row[0] if row else "{}")}
        changed = change(held)
        if changed:
            db.execute("UPDATE config SET data = %s", (json_text(held.get((), {})),))
        return changed
