"""The PostgreSQL store's keyed records: each primitive of
:class:`~mailslot.store.primitives.Records` as one statement (or one transaction) on
the namespace's table (:mod:`.pg_tables`); the governor's buckets, the config, taking a
queued wake and the locks are :mod:`.pg_limits`' and :mod:`.pg_wakes`'.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import psycopg

from ...core.errors import NotFound, StoreError
from ...store.namespaces import LOCKS, namespace
from . import pg_limits, pg_wakes
from .pg_connection import CHANNEL, PgConnection
from .pg_tables import TABLES, Key, Table


class PgRecords(PgConnection):
    """The :class:`~mailslot.store.primitives.Records` primitives on PostgreSQL."""

    def _table(self, space: str, key: Key, *, prefix: bool = False) -> Table:
        namespace(space).check(key, prefix=prefix)
        table = TABLES.get(space)
        if table is None:
            raise StoreError(f"the PostgreSQL store keeps {space} records apart")
        return table

    def _where(self, space: str, key: Key) -> str:
        return f"{self.location}#{space}/{'/'.join(key)}"

    def get(self, space: str, key: Key) -> Any:
        if space in pg_limits.KEPT:
            return pg_limits.get(self, space, namespace(space).check(key))
        table = self._table(space, key)
        rows = self._rows(f"cannot read {self._where(space, key)}",
                          table.select(len(key), table.values, order=False), key)
        if namespace(space).kind == "set":
            return {row[0] for row in rows}
        return table.decode(rows[0], key, self._where(space, key)) if rows else None

    def items(self, space: str, prefix: Key = ()) -> dict[Key, Any]:
        if space in pg_limits.KEPT:
            return pg_limits.items(self, space, namespace(space).check(prefix, prefix=True))
        table = self._table(space, prefix, prefix=True)
        width = len(table.keys)
        rows = self._rows(f"cannot list {self._where(space, prefix)}",
                          table.select(len(prefix), (*table.keys, *table.values)), prefix)
        found: dict[Key, Any] = {}
        for row in rows:
            key = tuple(row[:width])
            if namespace(space).kind == "set":
                found.setdefault(key, set()).add(row[width])
                continue
            try:
                found[key] = table.decode(row[width:], key, self._where(space, key))
            except (ValueError, StoreError):
                continue  # a damaged record: doctor names it, a listing goes on
        return found

    def keys(self, space: str, prefix: Key = ()) -> list[Key]:
        table = self._table(space, prefix, prefix=True)
        sql = table.select(len(prefix), table.keys).replace("SELECT", "SELECT DISTINCT", 1)
        return [tuple(row) for row in self._rows(
            f"cannot list {self._where(space, prefix)}", sql, prefix)]

    def put(self, space: str, key: Key, value: Any) -> None:
        table = self._table(space, key)
        if table.existing is not None:
            if not self._rows(f"cannot write {self._where(space, key)}", table.replace(),
                              (*table.encode(value), *key)):
                raise NotFound(table.existing.format(*key))
            return
        self._write(space, key, table.upsert(), (*key, *table.encode(value)), table)

    def add(self, space: str, key: Key, value: Any) -> bool:
        table = self._table(space, key)
        if namespace(space).kind == "set":
            conflict = "ON CONFLICT DO NOTHING" if not table.touched else (
                f"ON CONFLICT ({', '.join((*table.keys, *table.values))}) DO UPDATE SET "
                "touched = now()")
            self._write(space, key, table.insert(conflict, words=True), (*key, list(value)),
                        table)
            return True
        return self._write(space, key, table.insert("ON CONFLICT DO NOTHING"),
                           (*key, *table.encode(value)), table, repeat=table.repeat_add)

    def _write(self, space: str, key: Key, sql: str, params: Sequence[Any], table: Table,
               *, repeat: bool = True) -> bool:
        """One statement, and the announcement its table makes in the same transaction
        (so a listener hears of it only once it is committed); whether a row changed."""
        def work(db: psycopg.Connection[Any]) -> bool:
            if table.notify is None:
                return bool(db.execute(sql, params).rowcount)
            with db.transaction():
                changed = bool(db.execute(sql, params).rowcount)
                if changed:
                    kind, part = table.notify
                    db.execute("SELECT pg_notify(%s, %s)", (CHANNEL, f"{kind}:{key[part]}"))
                return changed
        return self._run(f"cannot write {self._where(space, key)}",  # type: ignore[no-any-return]
                         work, repeat=repeat)

    def delete(self, space: str, key: Key) -> bool:
        table = self._table(space, key)
        sql = f"DELETE FROM {table.name}{table.match(len(key))}"
        return self._run(f"cannot remove {self._where(space, key)}",  # type: ignore[no-any-return]
                         lambda db: bool(db.execute(sql, key).rowcount))

    def touched(self, space: str, prefix: Key = ()) -> dict[Key, float]:
        """By this machine's clock: the database says how long ago (its own clock), so
        a machine whose clock is off still waits the intervals it was asked to."""
        table = self._table(space, prefix, prefix=True)
        keys = ", ".join(table.keys)
        sql = (f"SELECT {keys}, extract(epoch FROM clock_timestamp() - max(touched)) FROM "
               f"{table.name}{table.match(len(prefix))} GROUP BY {keys} ORDER BY {keys}")
        now = time.time()
        return {tuple(row[:-1]): now - float(row[-1]) for row in self._rows(
            f"cannot read {self._where(space, prefix)}", sql, prefix)}

    def touch(self, space: str, key: Key) -> bool:
        table = self._table(space, key)
        sql = f"UPDATE {table.name} SET touched = now(){table.match(len(key))} RETURNING 1"
        return bool(self._rows(f"cannot write {self._where(space, key)}", sql, key))

    def update(self, space: str, keys: Sequence[Key],
               change: Callable[[dict[Key, Any]], bool]) -> bool:
        checked = [namespace(space).check(key) for key in keys]
        if space not in pg_limits.KEPT:
            raise StoreError(f"the PostgreSQL store does not update {space} records")
        return pg_limits.update(self, space, checked, change)

    def take(self, space: str, key: Key) -> tuple[Key, Any] | None:
        self._table(space, key)
        if space != "wake":
            raise StoreError(f"the PostgreSQL store does not take {space} records")
        return pg_wakes.take(self, key)

    def lock(self, name: str, key: Key) -> pg_wakes.WakeLock | pg_wakes.LaunchLock:
        if name == "launch" and key == ():
            return pg_wakes.LaunchLock(self)
        if name != "wake" or len(key) != len(LOCKS["wake"]):
            raise StoreError(f"no lock {name} {key!r} in a mailslot store")
        namespace("wake").check(key, prefix=True)
        return pg_wakes.WakeLock(self, key[1], f"mailslot {key[0]} {key[1]}")
