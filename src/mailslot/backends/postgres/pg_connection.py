"""The PostgreSQL store's connection: :class:`PgConnection`, the one base of every part
of :class:`~.pg_store.PostgresStore`.

One connection per store, opened on first use, in autocommit mode (:class:`Link`, shared
with the store's notifier-queue views); every call runs under its lock, with a database
error made one line naming the place, the cause and what to do, and a connection that
broke since the last call made again. The helpers at the end turn the JSON the store
keeps back and forth, as the file store writes it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NoReturn
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import errors as pg

from ...core.errors import StoreError
from ...core.message import Message, State
from .pg_schema import LATEST, schema_version

TYPE_CHECKING = False

CHANNEL = "mailslot"
"""The one NOTIFY channel; payloads are ``mail:<agent>`` (a delivery, a state change, an
archived or quarantined message), ``mail:*`` (a broadcast published, retracted or
quarantined), ``wake:<agent>`` (an entry in the wake queue or any notifier queue) and
``waiter:<agent>``."""


def redacted(url: str) -> str:
    """``url`` without its password, for people and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


class PgConnection:
    """The connection handling every part of the store shares: ``url``, ``location``,
    and :meth:`_run`, :meth:`_rows` and :meth:`_do` (a call under the lock, errors made
    one line, a broken connection made again)."""

    kind = "postgresql"
    folder: str | None = None

    def __init__(self, url: str) -> None:
        self.url = self.address = url
        self.location = redacted(url)
        self._link = Link()

    if TYPE_CHECKING:  # what one part calls of another (PostgresStore has them all)
        def load(self, agent: str, message_id: str, *, header_only: bool = False,
                 state: State | None = None) -> tuple[Message, State]: ...

        def load_broadcast(self, message_id: str, *, header_only: bool = False
                           ) -> tuple[Message, bool]: ...

        def entries(self, agent: str, states: Iterable[State]) -> list[tuple[str, State]]: ...

        def agent_names(self) -> list[str]: ...

        def broadcast_ids(self, *, live: bool = True) -> list[str]: ...

        def reindex(self) -> int: ...

        def _set_aside(self, agent: str | None, message_id: str, reason: str) -> None: ...

    # Connection and errors -------------------------------------------------------------
    def _connect(self) -> psycopg.Connection[Any]:
        """The open connection, made (again) if there is none or it broke."""
        link = self._link
        if link.conn is None or link.conn.closed or link.conn.broken:
            try:
                link.conn = psycopg.connect(self.url, autocommit=True, connect_timeout=5)
            except psycopg.Error as exc:
                link.conn = None
                raise StoreError(f"{self._error(exc, 'cannot connect')}; nothing was "
                                 "written") from None
            link.ready = False
        return link.conn

    def _db(self) -> psycopg.Connection[Any]:
        """The connection, with the schema at the version this mailslot knows. Only
        ``mailslot init`` creates or upgrades a schema: any other command on a database
        without one (a mistyped URL to another database) or with an older one refuses
        in one line and changes nothing, so a schema, and the policies an upgrade adds,
        change only when the database's administrator says so."""
        conn = self._connect()
        if not self._link.ready:
            version = schema_version(conn)
            if version is None:
                raise StoreError(f"no mailslot mailbox at {self.location} (it has no "
                                 "mailslot schema); nothing was written: run mailslot "
                                 f"init --store {self.location} to create one there")
            if version < LATEST:
                raise StoreError(f"the database at {self.location} has schema version "
                                 f"{version}, older than this mailslot's ({LATEST}); "
                                 f"nothing was written: run mailslot init --store "
                                 f"{self.location} to upgrade it")
            if version > LATEST:
                raise StoreError(f"the database at {self.location} has schema version "
                                 f"{version}, newer than this mailslot knows ({LATEST}); "
                                 "upgrade mailslot")
            self._link.ready = True
        return conn

    def _error(self, exc: psycopg.Error, what: str) -> StoreError:
        """One line for a failed database call: the place, the cause, what to do."""
        cause = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        if isinstance(exc, pg.DiskFull):
            return StoreError(f"{what}: the disk is full at {self.location} ({cause}); "
                              "free some space and try again (nothing was written)")
        if isinstance(exc, pg.InsufficientPrivilege):
            return StoreError(f"{what}: permission denied at {self.location} ({cause}); "
                              "the database role lacks the right (see docs/multi-host.md)")
        if isinstance(exc, psycopg.OperationalError):
            return StoreError(f"{what}: cannot reach the database at {self.location} "
                              f"({cause}); check that it runs and try again")
        return StoreError(f"{what}: {cause} ({self.location})")

    def _run(self, what: str, work: Callable[[psycopg.Connection[Any]], Any], *,
             schema: bool = True, repeat: bool = True) -> Any:
        """``work(connection)`` under the store's lock, database errors made one line;
        with ``schema``, the schema is brought up to date first. A connection that broke
        since the last call (the server restarted: a long-running server or watcher
        finds out only now) is made again and ``work`` run once more, if it may be
        (``repeat``: reading, or a change that is the same done twice)."""
        with self._link.lock:
            try:
                return work(self._db() if schema else self._connect())
            except psycopg.Error as exc:
                if not (repeat and self._lost(exc)):
                    raise self._error(exc, what) from None
                first = self._error(exc, what)
            try:
                return work(self._db() if schema else self._connect())
            except psycopg.Error as exc:
                raise self._error(exc, what) from None
            except StoreError:
                if self._link.conn is None:  # no new connection: the first failure is news
                    raise first from None
                raise

    def _lost(self, exc: BaseException | None) -> bool:
        """Did ``exc`` break the open connection (not: could not make one)?"""
        conn = self._link.conn
        return isinstance(exc, psycopg.OperationalError) and conn is not None and (
            conn.broken or conn.closed)

    def _rows(self, what: str, sql: str, params: Sequence[Any] | Mapping[str, Any] = (), *,
              repeat: bool = True) -> list[Any]:
        return self._run(what, lambda db: db.execute(sql, params).fetchall(),  # type: ignore[no-any-return]
                         repeat=repeat)

    def _do(self, what: str, sql: str, params: Sequence[Any] = (), *,
            repeat: bool = True) -> None:
        self._run(what, lambda db: db.execute(sql, params), repeat=repeat)

    def close(self) -> None:
        """Close the connection (a later call opens a new one)."""
        with self._link.lock:
            if self._link.conn is not None:
                self._link.conn.close()
                self._link.conn = None

    @staticmethod
    def _announce(db: psycopg.Connection[Any], agent: str) -> None:
        """Tell listeners ``agent``'s mailbox changed (``*``: the broadcasts), on commit."""
        db.execute("SELECT pg_notify(%s, %s)", (CHANNEL, f"mail:{agent}"))


class Link:
    """A store's one connection (opened on first use) and the lock its calls take turns
    under, shared with its notifier-queue views (:meth:`PostgresStore.notify_queue`)."""

    def __init__(self) -> None:
        self.conn: psycopg.Connection[Any] | None = None
        self.ready = False
        """Whether the schema is known to be at :data:`LATEST` on this connection."""
        self.lock = threading.RLock()
        self.offset: float | None = None
        """The database's clock minus this machine's (:meth:`PostgresStore.clock`)."""
        self.offset_at = 0.0
        self.rtt = float("inf")
        """The round trip ``offset`` was measured in: half of it bounds its error."""
        self.tried_at = 0.0

    def __del__(self) -> None:
        """A store dropped without :meth:`PostgresStore.close` still ends its connection
        cleanly."""
        if self.conn is not None:
            self.conn.close()


def json_text(value: Mapping[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False)


def log_line(record: Mapping[str, Any]) -> str:
    """A log record (events, the session log) as the file store writes its line."""
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


def log_record(line: str) -> dict[str, Any] | None:
    """A stored log record, or ``None`` for one that is not a JSON object (skipped)."""
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise StoreError(f"the stored config is not valid JSON ({exc})") from None
    return value if isinstance(value, dict) else _not_an_object()


def _not_an_object() -> NoReturn:
    raise StoreError("the stored config must be a JSON object")
