"""Where each namespace of keyed records lives in the database: one table each, as the
schema's migrations made them (:mod:`.pg_schema`; nothing here changes a table).

A :class:`Table` names a namespace's table, the columns its key's parts are, the
columns its value is (a ``set`` namespace: the one column of its words), and how a value
becomes those columns and back. The statements every record primitive runs are built
from that once, at import; the row-level policies of migration 8 were written for
exactly these statements (a sender's role inserts the recipient's wake, what passed a
gate and its mail for one session without reading them back: ``ON CONFLICT DO NOTHING``
and no ``RETURNING``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from ...store.format import decode_record, encode_record
from ...store.records import WakeEntry

Key = tuple[str, ...]
Decode = Callable[[Sequence[Any], Key, str], Any]
"""A value from its columns, its key and the place it is named by in an error."""


def _one(row: Sequence[Any], key: Key, place: str) -> Any:
    return row[0]


def _json(row: Sequence[Any], key: Key, place: str) -> Any:
    return json.loads(row[0])


def _json_text(value: Any) -> tuple[str]:
    return (json.dumps(value, ensure_ascii=False, separators=(",", ":")),)


def _empty(row: Sequence[Any], key: Key, place: str) -> str:
    return ""


def _wake(row: Sequence[Any], key: Key, place: str) -> WakeEntry:
    return WakeEntry(key[2], key[1], row[0], row[1], key[3] if len(key) > 3 else None)


class Table:
    """One namespace's table: ``keys`` and ``values`` its columns, ``where`` the rows
    that are this namespace's (``wakes`` holds two), ``touched`` whether it keeps when
    each row was last written, ``notify`` the announcement a write makes (its kind and
    the key part it names), ``existing``: ``put`` only replaces (else ``NotFound``)."""

    def __init__(self, name: str, keys: tuple[str, ...], values: tuple[str, ...] = (), *,
                 encode: Callable[[Any], tuple[Any, ...]] | None = None,
                 decode: Decode = _one, where: str = "", touched: bool = False,
                 notify: tuple[str, int] | None = None, existing: str | None = None,
                 repeat_add: bool = True) -> None:
        self.name, self.keys, self.values = name, keys, values
        self.encode = encode or ((lambda value: (value,)) if values else (lambda value: ()))
        self.decode, self.touched = decode, touched
        self.notify, self.existing, self.repeat_add = notify, existing, repeat_add
        self.where = f" AND {where}" if where else ""

    def match(self, parts: int) -> str:
        """``WHERE`` the first ``parts`` key columns are given (and this namespace's)."""
        given = " AND ".join(f"{column} = %s" for column in self.keys[:parts])
        return f" WHERE {given or 'true'}{self.where}"

    def select(self, parts: int, columns: Sequence[str], *, order: bool = True) -> str:
        return (f"SELECT {', '.join(columns) or '1'} FROM {self.name}{self.match(parts)}"
                + (f" ORDER BY {', '.join(self.keys)}" if order and self.keys else ""))

    def insert(self, conflict: str, *, words: bool = False) -> str:
        """One row (or, ``words``, one a word of a set) with ``conflict`` on a key taken."""
        columns = ", ".join((*self.keys, *self.values))
        if words:
            given = ", ".join(["%s"] * len(self.keys) + ["unnest(%s::text[])"])
            return f"INSERT INTO {self.name} ({columns}) SELECT {given} {conflict}"
        given = ", ".join(["%s"] * (len(self.keys) + len(self.values)))
        return f"INSERT INTO {self.name} ({columns}) VALUES ({given}) {conflict}"

    def upsert(self) -> str:
        changed = [f"{v} = excluded.{v}" for v in self.values]
        changed += ["touched = now()"] if self.touched else []
        target = ", ".join(self.keys) or "one"  # a table of one row: its key is `one`
        return self.insert(f"ON CONFLICT ({target}) DO UPDATE SET " + ", ".join(changed))

    def replace(self) -> str:
        changed = ", ".join(f"{v} = %s" for v in self.values)
        return f"UPDATE {self.name} SET {changed}{self.match(len(self.keys))} RETURNING 1"


TABLES: dict[str, Table] = {
    "shown": Table("shown", ("agent", "session"), ("id",), touched=True),
    "marks": Table("marks", ("agent", "session"), ("word",), touched=True),
    "seen": Table("seen", ("agent",), ("id",)),
    "passed": Table("passed", ("agent",), ("id",)),
    "hook-sessions": Table("hook_sessions", ("agent", "session"), ("record",),
                           encode=lambda facts: (json.dumps(facts, ensure_ascii=False),),
                           decode=_json, touched=True),
    "instances": Table("instance_mail", ("agent", "id"), ("session",), touched=True),
    "latest": Table("latest_sessions", ("agent", "host"), ("session",)),
    "claims": Table("claims", ("agent",), ("path",)),
    "waiters": Table("waiters", ("agent", "session"), ("pid",),
                     decode=lambda row, key, place: int(row[0]), touched=True,
                     notify=("waiter", 0)),
    "presence": Table("presence", ("agent", "key"), ("record",),
                      encode=lambda record: (json.dumps(record, ensure_ascii=False),),
                      decode=_json),
    "registry": Table("registry", ("name",), ("record",),
                      encode=lambda record: (encode_record(record),),
                      decode=lambda row, key, place: decode_record(bytes(row[0]), key[0],
                                                                   place),
                      existing="no registered agent {}"),
    "accept": Table("gates", ("agent",), ("accept",), where="accept <> 'open'"),
    "members": Table("members", ("agent", "member"), decode=_empty),
    "requests": Table("requests", ("agent", "requester"), ("id",)),
    "fences": Table("fences", ("agent", "session"), ("by_session",)),
    "once": Table("once", ("key",), decode=_empty, repeat_add=False),
    "wake": Table("wakes", ("queue", "agent", "id"), ("attempt", "not_before"),
                  encode=lambda entry: (entry.attempt, entry.not_before), decode=_wake,
                  where="claim = ''", notify=("wake", 1)),
    "wake.claimed": Table("wakes", ("queue", "agent", "id", "claim"),
                          ("attempt", "not_before"), decode=_wake, where="claim <> ''"),
    **{f"peers.{name}": Table(f"peer_{name}", keys, ("record",), encode=_json_text,
                              decode=_json)
       for name, keys in (("node", ()), ("known", ("node",)), ("links", ("node",)),
                          ("outbox", ("node", "item")), ("sent", ("agent", "id")),
                          ("received", ("node", "envelope")), ("progress", ("node",)))},
}
"""Every namespace kept as a table of its own rows (the governor's buckets and the
config are :mod:`.pg_limits`')."""
