"""The server store: the same :class:`~mailslot.store.base.Store` on PostgreSQL, for
agents on several machines (see docs/multi-host.md).

Opened by :func:`~mailslot.store.location.open_store` for a ``postgresql://`` URL; this
module (and psycopg with it) is imported only then, never on the file store's paths.
One connection per store, opened on first use, in autocommit mode; every change that
must be all or nothing is one transaction. Message text is stored as the exact bytes
the file store writes, so moving between stores is lossless. Changes are announced with
``NOTIFY mailslot, '<kind>:<agent>'`` inside their transaction, so a listener hears of
them only once they are committed.
"""

from __future__ import annotations

import copy
import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, NoReturn
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import errors as pg

from ...core.errors import IdTaken, NotFound, StoreError, Unreadable, UnsafePath
from ...core.ids import is_id, sender_of
from ...core.message import STATES, Message, State, to_bytes
from ...core.names import SESSION_KEY, check_name, is_accept
from ...core.query import Search
from ...core.text import quoted
from ..format import decode_record, encode_record, parse_message_file
from ..records import AgentRecord, StoredFile, WakeEntry, notify_lane
from . import pg_search
from .pg_schema import LATEST, grant, migrate, schema_version

CHANNEL = "mailslot"
"""The one NOTIFY channel; payloads are ``mail:<agent>`` (a delivery, a state change, an
archived or quarantined message), ``mail:*`` (a broadcast published, retracted or
quarantined), ``wake:<agent>`` (an entry in the wake queue or any notifier queue) and
``waiter:<agent>``."""
BATCH = 1000
"""Events are read this many at a time (the log can be long)."""
RECONNECT_SECONDS = 5.0
"""How long a send whose connection broke waits for the server to be back (a restart
takes a second or two) before saying whether it was sent."""
CLOCK_SECONDS = 300.0
"""How long a measured offset between this machine's clock and the database's is used
before it is measured again (a clock stepped by NTP is caught within this)."""


def redacted(url: str) -> str:
    """``url`` without its password, for people and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


class PostgresStore:
    """The store in the PostgreSQL database at ``url`` (credentials from the URL or
    libpq's own sources: ``PGPASSFILE``, ``PGSERVICE``, the environment)."""

    kind = "postgresql"
    folder: str | None = None

    def __init__(self, url: str) -> None:
        self.url = url
        self.location = redacted(url)
        self._link = Link()
        self._queue = "wake"
        """Which queue the ``wake_*`` methods act on (:meth:`notify_queue`)."""

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

    def _rows(self, what: str, sql: str, params: Sequence[Any] = (), *,
              repeat: bool = True) -> list[Any]:
        return self._run(what, lambda db: db.execute(sql, params).fetchall(),  # type: ignore[no-any-return]
                         repeat=repeat)

    def _do(self, what: str, sql: str, params: Sequence[Any] = (), *,
            repeat: bool = True) -> None:
        self._run(what, lambda db: db.execute(sql, params), repeat=repeat)

    def exists(self) -> bool:
        """Reading the schema's version once: at :data:`LATEST`, the next call need not
        read it again (a hook's round trips)."""
        def check(db: psycopg.Connection[Any]) -> bool:
            version = schema_version(db)
            if version == LATEST:
                self._link.ready = True
            return version is not None
        return bool(self._run("cannot open the mailbox", check, schema=False))

    def clock(self) -> float:
        """The database's ``now()``: this machine's clock plus an offset measured in one
        round trip (the midpoint of the query) and kept for :data:`CLOCK_SECONDS`, so
        asking costs nothing most of the time. While the database is unreachable the
        last offset measured goes on being used."""
        link = self._link
        if link.offset is None or time.monotonic() - link.offset_at > CLOCK_SECONDS:
            def measure(db: psycopg.Connection[Any]) -> float:
                before = time.time()
                row = db.execute("SELECT extract(epoch FROM clock_timestamp())").fetchone()
                after = time.time()
                return float(row[0]) - (before + after) / 2 if row else 0.0
            try:
                link.offset = self._run("cannot read the database's clock", measure,
                                        schema=False)
            except StoreError:
                if link.offset is None:
                    raise
            link.offset_at = time.monotonic()  # unreachable: the last offset, for a while
        return time.time() + link.offset

    def close(self) -> None:
        """Close the connection (a later call opens a new one)."""
        with self._link.lock:
            if self._link.conn is not None:
                self._link.conn.close()
                self._link.conn = None

    # Directed mail ---------------------------------------------------------------------
    def _insert_message(self, what: str, message: Message,
                        statements: Sequence[tuple[str, Sequence[Any]]], owner: str) -> None:
        """Run ``statements`` in one transaction; a taken id is ``IdTaken``.

        A connection lost mid-send (the server restarted) is made again, waiting up to
        :data:`RECONNECT_SECONDS`; then a send cut off before its commit runs again
        once, and one cut off during its commit is looked up (its search row is written
        in the same transaction), so it is neither lost nor doubled. If the server does
        not come back, the one-line error says whether the message was sent: "nothing
        was sent", or, lost during the commit, that it cannot be known yet."""
        stage = ["connecting"]

        def work(db: psycopg.Connection[Any]) -> None:
            stage[0] = "sending"
            with db.transaction():
                for sql, params in statements:
                    db.execute(sql, params)
                stage[0] = "committing"  # every statement done: only the commit is left

        for attempt in (1, 2):
            stage[0] = "connecting"
            try:
                self._run(what, work, repeat=False)
                return
            except StoreError as exc:
                cause = exc.__context__
                if isinstance(cause, pg.UniqueViolation):
                    if attempt == 2:  # ids are random: the first attempt landed after all
                        return
                    raise IdTaken(f"{message.id} is already taken in {owner}; nothing was "
                                  "written") from None
                if not isinstance(cause, psycopg.OperationalError):
                    raise
                if stage[0] == "connecting":
                    raise  # no connection: nothing was written, and the error says so
                if not self._reconnect():
                    raise self._unsent(exc, message, stage[0]) from None
                if stage[0] == "committing" and self._landed(message):
                    return
                if attempt == 2:  # the server is there, and the message is not
                    raise self._unsent(exc, message, "sending") from None

    def _reconnect(self) -> bool:
        """Connect again, waiting up to :data:`RECONNECT_SECONDS` for the server."""
        deadline = time.monotonic() + RECONNECT_SECONDS
        while True:
            try:
                with self._link.lock:
                    self._connect()
                return True
            except StoreError:
                if time.monotonic() >= deadline:
                    return False
                time.sleep(0.5)

    def _landed(self, message: Message) -> bool:
        """Did the delivery of ``message`` commit? Its search row says (a sender's role
        may read it, and it is written in the same transaction)."""
        return bool(self._rows(f"cannot look up {message.id}",
                               "SELECT FROM search WHERE id = %s", (message.id,)))

    @staticmethod
    def _unsent(exc: StoreError, message: Message, stage: str) -> StoreError:
        """``exc`` with what became of the message: never a guess."""
        if stage == "committing":
            return StoreError(f"{exc}; whether {message.id} was sent cannot be known until "
                              "the database is back (the connection broke during its "
                              "commit): look with `mailslot status ID` before sending again")
        return StoreError(f"{exc}; nothing was sent (it never committed)")

    def deliver(self, message: Message, recipients: Sequence[str]) -> None:
        names = list(recipients)
        self._insert_message(f"cannot deliver {message.id} to {', '.join(names)}", message, [
            ("INSERT INTO mail (agent, id, state, data, sender, reply_to) SELECT a, %s, "
             "'unread', %s, %s, %s FROM unnest(%s::text[]) a",
             (message.id, to_bytes(message), message.sender, message.in_reply_to, names)),
            ("SELECT pg_notify(%s, 'mail:' || a) FROM unnest(%s::text[]) a", (CHANNEL, names)),
            (pg_search.INDEX, pg_search.index_row(message)),
        ], "a recipient's mailbox")

    def entries(self, agent: str, states: Iterable[State]) -> list[tuple[str, State]]:
        return [(i, s) for i, s in self._rows(
            f"cannot list {agent}'s mail",
            "SELECT id, state FROM mail WHERE agent = %s AND state = ANY(%s)",
            (agent, list(states)))]

    def load(self, agent: str, message_id: str, *, header_only: bool = False,
             state: State | None = None) -> tuple[Message, State]:
        rows = self._rows(f"cannot read {message_id}",
                          "SELECT data, state, sender FROM mail WHERE agent = %s AND id = %s",
                          (agent, message_id))
        if not rows:
            raise NotFound(f"no message {message_id} for {agent}")
        data, state, bound = rows[0]
        message = parse_message_file(bytes(data), message_id, self._place(agent, message_id),
                                     header_only)
        return self._bound(agent, message, bound), state

    def state_of(self, agent: str, message_id: str) -> State | None:
        rows = self._rows(f"cannot read {message_id}",
                          "SELECT state FROM mail WHERE agent = %s AND id = %s",
                          (agent, message_id))
        return rows[0][0] if rows else None

    def move(self, agent: str, message_id: str, to: State) -> State:
        def work(db: psycopg.Connection[Any]) -> State:
            with db.transaction():
                row = db.execute("SELECT state FROM mail WHERE agent = %s AND id = %s "
                                 "FOR UPDATE", (agent, message_id)).fetchone()
                if row is None:
                    raise NotFound(f"no message {message_id} for {agent}")
                state: State = row[0]
                if STATES.index(state) < STATES.index(to):
                    db.execute("UPDATE mail SET state = %s WHERE agent = %s AND id = %s",
                               (to, agent, message_id))
                    self._announce(db, agent)
                return state
        return self._run(f"cannot move {message_id}", work)  # type: ignore[no-any-return]

    @staticmethod
    def _announce(db: psycopg.Connection[Any], agent: str) -> None:
        """Tell listeners ``agent``'s mailbox changed (``*``: the broadcasts), on commit."""
        db.execute("SELECT pg_notify(%s, %s)", (CHANNEL, f"mail:{agent}"))

    def _place(self, agent: str, message_id: str) -> str:
        return f"{self.location}#{agent}/{message_id}"

    def path_of(self, agent: str, message_id: str) -> str | None:
        return None if self.state_of(agent, message_id) is None else self._place(
            agent, message_id)

    # Broadcasts ------------------------------------------------------------------------
    def publish(self, message: Message) -> None:
        self._insert_message(f"cannot publish {message.id}", message, [
            ("INSERT INTO broadcasts (id, live, data, sender) VALUES (%s, true, %s, %s)",
             (message.id, to_bytes(message), message.sender)),
            ("SELECT pg_notify(%s, 'mail:*')", (CHANNEL,)),
            (pg_search.INDEX, pg_search.index_row(message)),
        ], "the broadcasts")

    def broadcast_ids(self, *, live: bool = True) -> list[str]:
        return [r[0] for r in self._rows("cannot list the broadcasts",
                                         "SELECT id FROM broadcasts WHERE live = %s", (live,))]

    def load_broadcast(self, message_id: str, *, header_only: bool = False
                       ) -> tuple[Message, bool]:
        rows = self._rows(f"cannot read broadcast {message_id}",
                          "SELECT data, live, sender FROM broadcasts WHERE id = %s",
                          (message_id,))
        if not rows:
            raise NotFound(f"no broadcast {message_id}")
        data, live, bound = rows[0]
        message = parse_message_file(bytes(data), message_id, self._place("broadcast", message_id),
                         header_only)
        return self._bound(None, message, bound), live

    def _bound(self, agent: str | None, message: Message, bound: str) -> Message:
        """``message`` if its header names the sender the database bound to its row (the
        ``sender`` column the row-level policies check); else the row is refused:
        :class:`Forged`, after setting it aside in the quarantine with the reason, where
        ``doctor`` reports it. ``''``: a row from before senders were bound (migrations
        3 and 8), written by the admin role, which no agent role can write."""
        if bound == "" or (message.sender == bound
                           and (not is_id(message.id) or sender_of(message.id) == bound)):
            return message
        named = message.sender if message.sender != bound else sender_of(message.id)
        why = (f"it says it is from {quoted(named)} but the database bound it to "
               f"{quoted(bound)} (a forged sender)")
        self._set_aside(agent, message.id, why)
        raise Forged(f"{self._place(agent or 'broadcast', message.id)}: {why}; mailslot "
                     "refuses it (see mailslot doctor)")

    def retract(self, message_id: str) -> bool:
        def work(db: psycopg.Connection[Any]) -> bool:
            with db.transaction():
                row = db.execute("SELECT live FROM broadcasts WHERE id = %s FOR UPDATE",
                                 (message_id,)).fetchone()
                if row is None:
                    raise NotFound(f"no broadcast {message_id}")
                if row[0]:
                    db.execute("UPDATE broadcasts SET live = false WHERE id = %s",
                               (message_id,))
                    self._announce(db, "*")
                return bool(row[0])
        return self._run(f"cannot retract {message_id}", work)  # type: ignore[no-any-return]

    def seen(self, agent: str) -> set[str]:
        return {r[0] for r in self._rows(f"cannot read what {agent} has seen",
                                         "SELECT id FROM seen WHERE agent = %s", (agent,))}

    def add_seen(self, agent: str, message_ids: Sequence[str]) -> None:
        if message_ids:
            self._do(f"cannot record what {agent} has seen",
                     "INSERT INTO seen SELECT %s, unnest(%s::text[]) ON CONFLICT DO NOTHING",
                     (agent, list(message_ids)))

    def archive_mailbox(self, agent: str, stamp: str) -> str:
        box = f"{agent}-{stamp}"

        def work(db: psycopg.Connection[Any]) -> int:
            with db.transaction():
                moved = db.execute("WITH gone AS (DELETE FROM mail WHERE agent = %s "
                                   "RETURNING agent, id, state, data) INSERT INTO "
                                   "archived_mail SELECT %s, * FROM gone", (agent, box))
                if moved.rowcount:
                    self._announce(db, agent)
                return moved.rowcount
        if not self._run(f"cannot archive {agent}'s mailbox", work):
            raise NotFound(f"no mailbox for {agent}")
        return f"{self.location}#archive/{box}"

    # Everything else -------------------------------------------------------------------
    def agent_names(self) -> list[str]:
        return [r[0] for r in self._rows("cannot list the mailboxes",
                                         "SELECT DISTINCT agent FROM mail ORDER BY agent")]

    def append_event(self, event: Mapping[str, Any], *, durable: bool = False) -> None:
        # every commit is durable here (synchronous_commit), so ``durable`` changes nothing
        self._do("cannot add to the events log", "INSERT INTO events (record) VALUES (%s)",
                 (_line(event),), repeat=False)  # a lost commit may have landed

    def events(self, *, newest_first: bool = False) -> Iterator[dict[str, Any]]:
        order, compare = ("DESC", "<") if newest_first else ("ASC", ">")
        sql = (f"SELECT seq, record FROM events WHERE seq {compare} %s "
               f"ORDER BY seq {order} LIMIT {BATCH}")
        after = 2**62 if newest_first else 0
        while True:
            rows = self._rows("cannot read the events log", sql, (after,))
            for seq, line in rows:
                after = seq
                record = _log_record(line)
                if record is not None:
                    yield record
            if len(rows) < BATCH:
                return

    def load_config(self) -> dict[str, Any]:
        rows = self._rows("cannot read the config", "SELECT data FROM config")
        return _config(rows[0][0]) if rows else {}

    def update_config(self, change: Callable[[dict[str, Any]], bool]) -> bool:
        def work(db: psycopg.Connection[Any]) -> bool:
            with db.transaction():
                db.execute("INSERT INTO config (data) VALUES ('{}') ON CONFLICT DO NOTHING")
                row = db.execute("SELECT data FROM config FOR UPDATE").fetchone()
                config = _config(row[0] if row else "{}")
                changed = change(config)
                if changed:
                    db.execute("UPDATE config SET data = %s", (_json(config),))
                return changed
        return self._run("cannot save the config", work)  # type: ignore[no-any-return]

    def staging(self) -> list[StoredFile]:
        """Nothing is staged: a transaction that did not commit left nothing."""
        return []

    def remove_staging(self, item: StoredFile) -> None:
        """Nothing to remove (see :meth:`staging`)."""

    def problems(self) -> list[str]:
        """The database's own checks keep rows whole; what is left to report is a
        schema this mailslot does not know."""
        version = self._run("cannot read the schema version", schema_version)
        if version is not None and version > LATEST:
            return [f"{self.location} has schema version {version}; this mailslot knows "
                    f"{LATEST} (upgrade mailslot)"]
        return self._refused()

    def unreadable(self) -> list[tuple[str | None, str, str]]:
        found: list[tuple[str | None, str, str]] = []
        for agent in self.agent_names():
            for message_id, _ in self.entries(agent, STATES):
                try:
                    self.load(agent, message_id)
                except Forged:
                    continue  # set aside already; problems() names it
                except StoreError as exc:
                    found.append((agent, message_id, str(exc)))
                except NotFound:
                    continue
        for live in (True, False):
            for message_id in self.broadcast_ids(live=live):
                try:
                    self.load_broadcast(message_id)
                except Forged:
                    continue
                except StoreError as exc:
                    found.append((None, message_id, str(exc)))
                except NotFound:
                    continue
        return found

    def quarantine(self, agent: str | None, message_id: str) -> str:
        if not self._quarantine(agent, message_id, None):
            raise NotFound(f"no message {message_id} for {agent or 'the broadcasts'}")
        return f"{self.location}#quarantine/{agent or 'broadcast'}/{message_id}"

    def _quarantine(self, agent: str | None, message_id: str, reason: str | None) -> int:
        """Move one row to the quarantine (``''``: a broadcast), with why if refused."""
        if agent is None:
            sql = ("WITH gone AS (DELETE FROM broadcasts WHERE id = %s RETURNING id, data) "
                   "INSERT INTO quarantine (agent, id, data, reason) SELECT '', id, data, "
                   "%s FROM gone")
            params: tuple[str | None, ...] = (message_id, reason)
        else:
            sql = ("WITH gone AS (DELETE FROM mail WHERE agent = %s AND id = %s RETURNING "
                   "agent, id, data) INSERT INTO quarantine (agent, id, data, reason) "
                   "SELECT agent, id, data, %s FROM gone")
            params = (agent, message_id, reason)

        def work(db: psycopg.Connection[Any]) -> int:
            with db.transaction():
                gone = db.execute(sql, params).rowcount
                if gone:
                    self._announce(db, agent or "*")
                return gone
        return self._run(f"cannot quarantine {message_id}", work)  # type: ignore[no-any-return]

    def _set_aside(self, agent: str | None, message_id: str, reason: str) -> None:
        """Quarantine a refused row if this role may (its own mail; a broadcast: the
        admin role only). Where it may not, or the move fails, the row stays where it
        is and is refused again at every read: never shown either way."""
        try:
            self._quarantine(agent, message_id, reason)
        except StoreError:
            return

    _SUSPECTS = (
        "SELECT agent, id FROM (SELECT {agent} AS agent, id, sender, substring(data FROM 1 "
        "FOR position('\\x0a2d2d2d0a'::bytea IN data)) AS head FROM {table} "
        "WHERE sender <> '') m WHERE split_part(id, '_', 3) <> sender "
        "OR position(convert_to(E'\\nfrom: ' || sender || E'\\n', 'UTF8') IN head) = 0 "
        "OR position('\\x5c'::bytea IN head) > 0 "
        "OR length(encode(head, 'escape')) - length(replace(encode(head, 'escape'), "
        "'from', '')) <> 4")
    """Rows whose header may name another sender than the bound one, found without
    reading every message: any header that lacks the one exact line ``from: SENDER``,
    spells ``from`` more or less than once (a duplicate key, an alias, a quoted key),
    holds a backslash (an escaped key), or whose id names another sender. Mailslot
    writes none of these for an agent's name, so a healthy store has almost none; each
    is then read to be sure."""

    def _refused(self) -> list[str]:
        """Find and set aside forged rows (reading only the suspects), then every row
        the quarantine holds with a reason, one line each, for ``doctor``."""
        for table, agent in (("mail", "agent"), ("broadcasts", "NULL::text")):
            sql = self._SUSPECTS.format(table=table, agent=agent)
            for name, message_id in self._rows("cannot check the senders", sql):
                try:
                    if name is None:
                        self.load_broadcast(message_id, header_only=True)
                    else:
                        self.load(name, message_id, header_only=True)
                except (Unreadable, NotFound):
                    continue  # refused and set aside now, or unreadable: --deep says
        return [f"{self.location}#quarantine/{name or 'broadcast'}/{message_id}: refused, "
                f"{why}; kept in the quarantine table (look at it, then delete the row as "
                "the admin role)"
                for name, message_id, why in self._rows(
                    "cannot read the quarantine", "SELECT agent, id, reason FROM quarantine "
                    "WHERE reason IS NOT NULL ORDER BY id")]

    def fix_permissions(self) -> int:
        """Nothing to tighten: access is the database's roles (``mailslot pg grant``)."""
        return 0

    # Presence --------------------------------------------------------------------------
    def write_presence(self, agent: str, key: str, record: Mapping[str, Any]) -> None:
        self._do(f"cannot record presence of {agent}",
                 "INSERT INTO presence VALUES (%s, %s, %s) ON CONFLICT (agent, key) "
                 "DO UPDATE SET record = excluded.record", (agent, key, _json(record)))

    def presence(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        for agent, key, line in self._rows("cannot read presence",
                                           "SELECT agent, key, record FROM presence "
                                           "ORDER BY agent, key"):
            record = _config(line)
            found.append({**record, "agent": agent, "key": key})
        return found

    def remove_presence(self, agent: str, key: str) -> None:
        self._do(f"cannot remove presence of {agent}",
                 "DELETE FROM presence WHERE agent = %s AND key = %s", (agent, key))

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

    def _wakes(self, agent: str, claimed: bool) -> list[WakeEntry]:
        rows = self._rows(f"cannot read {agent}'s wakes",
                          "SELECT id, attempt, not_before, claim FROM wakes WHERE queue = %s "
                          "AND agent = %s AND (claim <> '') = %s",
                          (self._queue, agent, claimed))
        return [WakeEntry(i, agent, a, nb, c or None) for i, a, nb, c in rows]

    def wake_pending(self, agent: str) -> list[WakeEntry]:
        return self._wakes(agent, claimed=False)

    def wake_claim(self, entry: WakeEntry) -> WakeEntry | None:
        token = f"{entry.message_id}.{socket.gethostname()}.{os.getpid()}.{os.urandom(4).hex()}"
        rows = self._rows(f"cannot claim a wake for {entry.agent}",
                          "UPDATE wakes SET claim = %s WHERE queue = %s AND agent = %s AND "
                          "id = %s AND claim = '' RETURNING attempt, not_before",
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

    # Per-session delivery state ----------------------------------------------------------
    def shown(self, agent: str, session: str) -> set[str]:
        return {r[0] for r in self._rows(f"cannot read {agent}'s session",
                                         "SELECT id FROM shown WHERE agent = %s AND "
                                         "session = %s", (agent, session))}

    def shown_at(self, agent: str, session: str) -> float | None:
        """By this machine's clock: the database says how long ago (its own clock), so
        a machine whose clock is off still waits the interval it was asked to."""
        rows = self._rows(f"cannot read {agent}'s session",
                          "SELECT extract(epoch FROM clock_timestamp() - max(touched)) FROM "
                          "shown WHERE agent = %s AND session = %s", (agent, session))
        return None if rows[0][0] is None else time.time() - float(rows[0][0])

    def add_shown(self, agent: str, session: str, message_ids: Sequence[str]) -> None:
        if message_ids:
            self._do(f"cannot record {agent}'s session",
                     "INSERT INTO shown (agent, session, id) SELECT %s, %s, "
                     "unnest(%s::text[]) ON CONFLICT (agent, session, id) DO UPDATE SET "
                     "touched = now()", (agent, session, list(message_ids)))

    def prune_sessions(self, agent: str, older_than: float) -> None:
        """Untouched by the database's clock, the same for every machine."""
        def work(db: psycopg.Connection[Any]) -> None:
            with db.transaction():
                db.execute("DELETE FROM shown WHERE agent = %(a)s AND session IN (SELECT "
                           "session FROM shown WHERE agent = %(a)s GROUP BY session HAVING "
                           "max(touched) < now() - make_interval(secs => %(s)s))",
                           {"a": agent, "s": older_than})
                db.execute("DELETE FROM waiters WHERE agent = %s AND touched < now() - "
                           "make_interval(secs => %s)", (agent, older_than))
                for table in ("hook_sessions", "instance_mail"):
                    db.execute(f"DELETE FROM {table} WHERE agent = %s AND touched < now() "
                               "- make_interval(secs => %s)", (agent, older_than))
        self._run(f"cannot prune {agent}'s sessions", work)

    def refresh_hook_session(self, agent: str, session: str) -> bool:
        return bool(self._rows(f"cannot record {agent}'s session {session}",
                               "UPDATE hook_sessions SET touched = now() WHERE agent = %s "
                               "AND session = %s RETURNING 1", (agent, session)))

    def record_hook_session(self, agent: str, session: str, facts: Mapping[str, Any]
                            ) -> None:
        if not SESSION_KEY.fullmatch(session):
            raise UnsafePath(f"session key {session!r} is not safe to record")
        self._do(f"cannot record {agent}'s session {session}",
                 "INSERT INTO hook_sessions (agent, session, record) VALUES (%s, %s, %s) "
                 "ON CONFLICT (agent, session) DO UPDATE SET touched = now(), "
                 "record = excluded.record", (agent, session, _json(facts)))

    def add_instance_mail(self, agent: str, message_id: str, session: str) -> None:
        self._do(f"cannot record {agent}'s mail {message_id}",
                 "INSERT INTO instance_mail (agent, id, session) VALUES (%s, %s, %s) "
                 "ON CONFLICT DO NOTHING", (agent, message_id, session))

    def instance_mail(self, agent: str) -> dict[str, str]:
        return dict(self._rows(f"cannot read {agent}'s mail",
                               "SELECT id, session FROM instance_mail WHERE agent = %s",
                               (agent,)))

    def hook_sessions(self) -> list[dict[str, Any]]:
        """``seen`` by this machine's clock, from how long ago the database says."""
        found: list[dict[str, Any]] = []
        now = time.time()
        for agent, session, line, ago in self._rows(
                "cannot read the hook sessions",
                "SELECT agent, session, record, extract(epoch FROM clock_timestamp() - "
                "touched) FROM hook_sessions ORDER BY agent, session"):
            try:
                record = json.loads(line)
            except ValueError:
                continue  # not one mailslot wrote: not a session
            if isinstance(record, dict):
                found.append({**record, "agent": agent, "session": session,
                              "seen": now - float(ago)})
        return found

    def set_latest_session(self, agent: str, host: str, session: str) -> None:
        if not (SESSION_KEY.fullmatch(session) and SESSION_KEY.fullmatch(host)):
            raise UnsafePath(f"session {session!r} of {host!r} is not safe to record")
        self._do(f"cannot record {agent}'s latest session",
                 "INSERT INTO latest_sessions VALUES (%s, %s, %s) ON CONFLICT (agent, host) "
                 "DO UPDATE SET session = excluded.session", (agent, host, session))

    def latest_session(self, agent: str, host: str) -> str | None:
        """Only a safe session key: the table is shared by every agent role, and the id
        becomes an argument of the wake command."""
        rows = self._rows(f"cannot read {agent}'s latest session",
                          "SELECT session FROM latest_sessions WHERE agent = %s AND host = %s",
                          (agent, host))
        return rows[0][0] if rows and SESSION_KEY.fullmatch(rows[0][0]) else None

    def claim(self, agent: str, path: str) -> str:
        rows = self._rows(f"cannot claim {agent}",
                          "INSERT INTO claims VALUES (%s, %s) ON CONFLICT (agent) DO UPDATE "
                          "SET path = claims.path RETURNING path", (agent, path))
        return str(rows[0][0])

    def replace_claim(self, agent: str, path: str) -> None:
        self._do(f"cannot claim {agent}", "INSERT INTO claims VALUES (%s, %s) ON CONFLICT "
                 "(agent) DO UPDATE SET path = excluded.path", (agent, path))

    def set_waiter(self, agent: str, session: str, pid: int) -> None:
        self._do(f"cannot record {agent}'s waiter",
                 "WITH w AS (INSERT INTO waiters (agent, session, pid) VALUES (%s, %s, %s) "
                 "ON CONFLICT (agent, session) DO UPDATE SET pid = excluded.pid, "
                 "touched = now() RETURNING agent) SELECT pg_notify(%s, 'waiter:' || agent) "
                 "FROM w", (agent, session, pid, CHANNEL))

    def waiter(self, agent: str, session: str) -> int | None:
        rows = self._rows(f"cannot read {agent}'s waiter", "SELECT pid FROM waiters WHERE "
                          "agent = %s AND session = %s", (agent, session))
        return int(rows[0][0]) if rows else None

    def waiter_pids(self, agent: str) -> list[int]:
        return [int(r[0]) for r in self._rows(f"cannot read {agent}'s waiters",
                                              "SELECT pid FROM waiters WHERE agent = %s",
                                              (agent,))]

    # Watching --------------------------------------------------------------------------
    def watch(self, kick: Callable[[], None], *, mail_for: str | None = None,
              waiters_of: str | None = None, wakes: bool = False) -> Notifications:
        wanted = set()
        if mail_for is not None:
            wanted |= {f"mail:{mail_for}", "mail:*"}
        if waiters_of is not None:
            wanted.add(f"waiter:{waiters_of}")
        how = "the wake queue" if wakes else f"mail for {mail_for}"

        def relevant(payload: str) -> bool:
            return payload in wanted or (wakes and payload.startswith("wake:"))
        return self._listen(kick, relevant, how)

    def _listen(self, kick: Callable[[], None], relevant: Callable[[str], bool],
                how: str) -> Notifications:
        with self._link.lock:
            self._db()  # the schema exists before anyone listens
        return Notifications(self, kick, relevant, f"{how} (PostgreSQL notifications)")

    # Notifier queues --------------------------------------------------------------
    def notify_queue(self, lane: int) -> PostgresStore:
        """A view sharing this store's connection (and its lock)."""
        view = copy.copy(self)
        view._queue = notify_lane(lane)
        return view

    # The web page's live view ------------------------------------------------------
    def watch_mail(self, kick: Callable[[], None]) -> Notifications:
        return self._listen(kick, lambda payload: payload.startswith("mail:"),
                            "every mailbox")

    # The session log (rules in mailslot.launch.starting) -------------------------------------
    def log_session(self, record: Mapping[str, Any]) -> None:
        """One row, committed before returning (the file store's ``sessions.jsonl``)."""
        self._do("cannot add to the session log",
                 "INSERT INTO session_log (record) VALUES (%s)", (_line(record),),
                 repeat=False)  # a lost commit may have landed

    def launch_lock(self) -> LaunchLock:
        return LaunchLock(self)

    def started_sessions(self) -> list[dict[str, Any]]:
        rows = self._rows("cannot read the session log",
                          "SELECT record FROM session_log ORDER BY seq")
        return [r for r in (_log_record(line) for (line,) in rows) if r is not None]

    # Search (store/pg_search.py) ----------------------------------------------------
    def search(self, request: Search) -> list[str]:
        """Rebuilds first once after the upgrade that added search to a store with mail."""
        if self._rows("cannot search", "SELECT FROM search_stale"):
            self.reindex()
        sql, params = pg_search.select(request)
        return [r[0] for r in self._rows("cannot search", sql, params)]

    def reindex(self) -> int:
        """From every stored message, in one transaction (the admin role's work)."""
        def work(db: psycopg.Connection[Any]) -> int:
            with db.transaction():
                db.execute("DELETE FROM search")
                stored = db.execute("SELECT DISTINCT ON (id) id, data FROM (SELECT id, data "
                                    "FROM mail UNION ALL SELECT id, data FROM broadcasts) m "
                                    "ORDER BY id").fetchall()
                for message_id, data in stored:
                    try:
                        message = parse_message_file(bytes(data), message_id, message_id, False)
                    except Unreadable:
                        continue  # doctor --deep names it
                    db.execute(pg_search.INDEX, pg_search.index_row(message))
                db.execute("DELETE FROM search_stale")
                row = db.execute("SELECT count(*) FROM search").fetchone()
                return int(row[0]) if row else 0
        return self._run("cannot rebuild the search index", work)  # type: ignore[no-any-return]

    # Creating and upgrading a store --------------------------------------------
    def init(self) -> str:
        """Apply the migrations this database lacks (each in one transaction); as the
        admin role, so the search an upgrade adds is built here, not by an agent role's
        first search (which may not rebuild it)."""
        applied = self._run("cannot create the schema", migrate, schema=False)
        self._link.ready = True
        if self._rows("cannot search", "SELECT FROM search_stale"):
            self.reindex()
        return (f"{self.location}: schema at version {LATEST} ({applied} migration"
                f"{'' if applied == 1 else 's'} applied)")


    # Registered agents (rules in mailslot.access.authority) ----------------------------
    # The same JSON record the file store keeps in registry/<name>.json, one row each.
    def register_agent(self, record: AgentRecord) -> bool:
        return bool(self._rows(f"cannot register {record.name}",
                               "INSERT INTO registry VALUES (%s, %s) ON CONFLICT DO NOTHING "
                               "RETURNING 1", (record.name, encode_record(record))))

    def _record(self, name: str, data: bytes) -> AgentRecord:
        return decode_record(bytes(data), name, f"{self.location}#registry/{name}")

    def registered(self, name: str) -> AgentRecord | None:
        rows = self._rows(f"cannot read {name}'s registration",
                          "SELECT record FROM registry WHERE name = %s", (name,))
        return self._record(name, rows[0][0]) if rows else None

    def registered_agents(self) -> list[AgentRecord]:
        found = []
        for name, data in self._rows("cannot list the registered agents",
                                     "SELECT name, record FROM registry ORDER BY name"):
            try:
                found.append(self._record(name, data))
            except Unreadable:
                continue  # doctor names it; a listing goes on
        return found

    def replace_registered(self, record: AgentRecord) -> None:
        if not self._rows(f"cannot update {record.name}'s registration",
                          "UPDATE registry SET record = %s WHERE name = %s RETURNING 1",
                          (encode_record(record), record.name)):
            raise NotFound(f"no registered agent {record.name}")


    # Gates (rules in mailslot.access.gates) --------------------------------------------
    def set_accept(self, agent: str, accept: str) -> None:
        self._do(f"cannot set {agent}'s gate",
                 "INSERT INTO gates VALUES (%s, %s) ON CONFLICT (agent) DO UPDATE "
                 "SET accept = excluded.accept", (agent, accept))

    def accept_of(self, agent: str) -> str:
        """``"open"`` when never set; anything unknown reads as ``"members"`` (shut)."""
        rows = self._rows(f"cannot read {agent}'s gate",
                          "SELECT accept FROM gates WHERE agent = %s", (agent,))
        value = rows[0][0] if rows else "open"
        return value if is_accept(value) else "members"

    def set_member(self, agent: str, member: str, admitted: bool) -> bool:
        sql = ("INSERT INTO members VALUES (%s, %s) ON CONFLICT DO NOTHING RETURNING 1"
               if admitted else
               "DELETE FROM members WHERE agent = %s AND member = %s RETURNING 1")
        return bool(self._rows(f"cannot change {agent}'s members", sql, (agent, member)))

    def members(self, agent: str) -> list[str]:
        return [r[0] for r in self._rows(f"cannot read {agent}'s members",
                                         "SELECT member FROM members WHERE agent = %s "
                                         "ORDER BY member", (agent,))]

    def set_request(self, agent: str, requester: str, message_id: str | None) -> None:
        if message_id is None:
            self._do(f"cannot close a request to {agent}",
                     "DELETE FROM requests WHERE agent = %s AND requester = %s",
                     (agent, requester))
        else:
            self._do(f"cannot record a request to {agent}",
                     "INSERT INTO requests VALUES (%s, %s, %s) ON CONFLICT (agent, "
                     "requester) DO UPDATE SET id = excluded.id", (agent, requester,
                                                                    message_id))

    def requests(self, agent: str) -> dict[str, str]:
        return dict(self._rows(f"cannot read the requests to {agent}",
                               "SELECT requester, id FROM requests WHERE agent = %s",
                               (agent,)))

    def add_passed(self, agent: str, message_ids: Sequence[str]) -> None:
        if message_ids:
            self._do(f"cannot record what passed {agent}'s gate",
                     "INSERT INTO passed SELECT %s, unnest(%s::text[]) ON CONFLICT DO NOTHING",
                     (agent, list(message_ids)))

    def passed(self, agent: str) -> set[str]:
        return {r[0] for r in self._rows(f"cannot read what passed {agent}'s gate",
                                         "SELECT id FROM passed WHERE agent = %s", (agent,))}

    # Fenced sessions (rules in mailslot.access.fencing) ---------------------------------
    def fence(self, agent: str, session: str, by: str) -> None:
        """Once: a second fence of the same session keeps the first."""
        self._do(f"cannot fence {agent}'s session", "INSERT INTO fences VALUES (%s, %s, %s) "
                 "ON CONFLICT DO NOTHING", (agent, session, by))

    def fenced_by(self, agent: str, session: str) -> str | None:
        rows = self._rows(f"cannot read {agent}'s sessions",
                          "SELECT by_session FROM fences WHERE agent = %s AND session = %s",
                          (agent, session))
        return str(rows[0][0]) if rows else None

    # Agent roles -----------------------------------------------------------------
    def grant(self, agent: str) -> str:
        """Create the database role for ``agent`` (``mailslot pg grant``); one line back."""
        name = check_name(agent, "agent name")
        role = self._run(f"cannot create a role for {name}", lambda db: grant(db, name))
        return (f"role {role} may now use {self.location} as {name}: it reads and moves "
                f"only {name}'s mail and sends only as {name}; give it a password (ALTER "
                f"ROLE {role} PASSWORD ...) or a client certificate (docs/multi-host.md)")


class Forged(Unreadable):
    """A row whose header names another sender than the one the database bound."""


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

    def __del__(self) -> None:
        """A store dropped without :meth:`PostgresStore.close` still ends its connection
        cleanly."""
        if self.conn is not None:
            self.conn.close()


class WakeLock:
    """``wake_lock``'s context: a session advisory lock on the store's connection, so
    the database releases it when the holder's connection ends (it died or lost its
    network). Other processes and machines are kept out; within one process the lock is
    shared by its threads (PostgreSQL's advisory locks are re-entrant per connection),
    which the watcher never needs, running at most one pass per agent at a time. The key
    names the queue and the agent (``mailslot wake gemini``, ``mailslot notify-3
    gemini``), so a running wake never holds up a notifier, nor one notifier another."""

    def __init__(self, store: PostgresStore, agent: str, key: str) -> None:
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
    """``launch_lock``'s context: a session advisory lock taken, waiting, on a connection
    of its own, closed on exit. Its own: an advisory lock is re-entrant on the store's
    shared connection (threads would not exclude each other), and waiting there would
    hold up every other call of this process. The database releases it if the holder's
    connection ends (it died or lost its network)."""

    _KEY = "mailslot launch"

    def __init__(self, store: PostgresStore) -> None:
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


class Notifications:
    """A running watch: its own connection LISTENing on :data:`CHANNEL`, in a thread
    that calls ``kick`` for each relevant notification and reconnects by itself (with
    a kick, since changes may have been missed meanwhile)."""

    def __init__(self, store: PostgresStore, kick: Callable[[], None],
                 relevant: Callable[[str], bool], how: str) -> None:
        self.how = how
        self._store, self._kick, self._relevant = store, kick, relevant
        self._stop = threading.Event()
        self._conn: psycopg.Connection[Any] | None = self._listen()
        self._thread = threading.Thread(target=self._run, name="mailslot-listen",
                                        daemon=True)
        self._thread.start()

    def _listen(self) -> psycopg.Connection[Any]:
        try:
            conn = psycopg.connect(self._store.url, autocommit=True, connect_timeout=5)
            conn.execute(f"LISTEN {CHANNEL}")
        except psycopg.Error as exc:
            raise self._store._error(exc, "cannot listen for mail") from None
        return conn

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                if self._conn is None:
                    self._conn = self._listen()
                    self._kick()
                for note in self._conn.notifies(timeout=0.5):
                    if self._relevant(note.payload):
                        self._kick()
            except (psycopg.Error, StoreError):
                self._drop()
                self._stop.wait(1.0)  # the server restarts; try again soon

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self._drop()


def _json(value: Mapping[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False)


def _line(record: Mapping[str, Any]) -> str:
    """A log record (events, the session log) as the file store writes its line."""
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


def _log_record(line: str) -> dict[str, Any] | None:
    """A stored log record, or ``None`` for one that is not a JSON object (skipped)."""
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _config(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise StoreError(f"the stored config is not valid JSON ({exc})") from None
    return value if isinstance(value, dict) else _not_an_object()


def _not_an_object() -> NoReturn:
    raise StoreError("the stored config must be a JSON object")
