"""The file store's search index: SQLite FTS5 in ``index/search.sqlite``, derived and
disposable.

The message files stay the truth. The index holds each message once (its id, sender,
recipients, UTC date, thread and the words of its subject and body); state is never
indexed, since it lives in the folders and changes by renames. A delivery does not
write the index: it appends a line to ``index/new.log`` (:mod:`.unindexed`), and a search
first adds the marked messages, then answers. If the index cannot be used (damaged, a
marker that could not be left) a ``stale`` marker is left and the next search rebuilds
the index from the files first. ``mailslot index --rebuild`` does the same on demand
(after messages were copied in by hand, say).

Written with ``synchronous=OFF`` and the rollback journal in memory: the index is a
disposable copy, so it pays no fsync and no journal file, and the file changes only
when a transaction commits. A crash or power loss may drop the last index entries or
damage the file (never a message): a damaged index is found by the next search and
rebuilt from an empty file (docs/keep.md).

Loaded by the file store on first use only: neither a send nor the hook path loads it
(nor ``sqlite3``).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time

from ...core.durable import CREATE, remove
from ...core.errors import MailslotError, StoreError, UnsafePath
from ...core.ids import is_id
from ...core.message import STATES
from ...core.names import is_valid_name
from ...core.query import All, Any, Not, Search, Term, utc
from .unindexed import BROADCAST, STALE_FILE, mark_stale, taking, waiting

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

    from ...core.message import Message
    from ...core.query import Node
    from .archive_files import MonthArchives
    from .layout import MailboxFiles

INDEX_FILE = "search.sqlite"
_BUSY_MS = 2000
BATCH = 100
"""Messages indexed in one transaction: small enough that a search's catch-up stops
near its deadline and a killed process loses only its last batch's work."""
CATCH_UP_SECONDS = 0.3
"""A search indexes newly delivered mail for at most about this long, then answers (and
says how many newest messages it did not search yet)."""
CANDIDATES = 2000
"""Ranking looks at the newest this many matches the caller may see (docs/keep.md): what
ranking costs grows with the matches, and a word in every message would otherwise cost
a search hundreds of milliseconds at 100,000 messages."""
_SCHEMA = """
CREATE TABLE IF NOT EXISTS messages(
    n INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, sender TEXT NOT NULL,
    recipients TEXT NOT NULL, utc TEXT NOT NULL, thread TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS messages_thread ON messages(thread);
CREATE INDEX IF NOT EXISTS messages_utc ON messages(utc);
CREATE TABLE IF NOT EXISTS pending(id TEXT PRIMARY KEY, places TEXT NOT NULL) WITHOUT ROWID;
CREATE VIRTUAL TABLE IF NOT EXISTS words USING fts5(
    subject, body, tokenize='unicode61 remove_diacritics 2', prefix='2 3 4');
"""


def fts(node: Node) -> str:
    """The tree of :mod:`mailslot.core.query` in FTS5's syntax, every word quoted (so no word
    is ever read as FTS5's own syntax). NOT is binary in FTS5: ``a NOT b``."""
    if isinstance(node, Term):
        phrase = '"' + " ".join(node.words) + '"'
        return phrase + "*" if node.prefix else phrase
    if isinstance(node, Any):
        return "(" + " OR ".join(fts(p) for p in node.parts) + ")"
    if isinstance(node, Not):
        return fts(node.part)
    assert isinstance(node, All)
    positive = " AND ".join(fts(p) for p in node.parts if not isinstance(p, Not))
    negative = "".join(f" NOT {fts(p)}" for p in node.parts if isinstance(p, Not))
    return f"(({positive}){negative})"


class SearchIndex:
    """The index of one file store (opened on first use); ``agents`` lists its mailboxes."""

    def __init__(self, store: MailboxFiles, agents: Callable[[], list[str]],
                 archives: MonthArchives) -> None:
        self.store = store
        self._agents = agents
        self.archives = archives
        self._db: sqlite3.Connection | None = None
        self._lock = threading.RLock()  # one connection: one thread at a time uses it

    def _folder(self, *, create: bool = False) -> str:
        return self.store._folder("index", create=create)

    def _connect(self, *, create: bool) -> sqlite3.Connection | None:
        """The index, opened once; ``None`` if there is none yet and not ``create``.
        Raises ``sqlite3.Error`` for a file SQLite cannot use (callers decide)."""
        if self._db is not None:
            return self._db
        path = os.path.join(self._folder(create=create), INDEX_FILE)
        if os.path.islink(path):
            raise UnsafePath(f"{path} is a symlink; mailslot never follows it (remove it)")
        if not os.path.exists(path):
            if not create:
                return None
            with contextlib.suppress(FileExistsError):
                os.close(os.open(path, CREATE, 0o600))  # 0600 before SQLite opens it
        db = sqlite3.connect(path, timeout=_BUSY_MS / 1000, isolation_level=None,
                             check_same_thread=False)
        try:
            db.execute("PRAGMA journal_mode=MEMORY")
            db.execute("PRAGMA synchronous=OFF")
            db.executescript(_SCHEMA)
        except sqlite3.Error:
            db.close()
            raise
        self._db = db
        return db

    def _stale_path(self) -> str:
        return os.path.join(self._folder(), STALE_FILE)

    def _note(self, db: sqlite3.Connection, stored: Iterable[tuple[str, str]] = (),
              *, reset: bool = False) -> None:
        """Move the lines of ``index/new.log`` into ``pending`` (with ``reset``: empty the
        index and make every message of ``stored`` pending too), in one transaction.
        SQLite's write lock is taken before the log's, so a send waits only for the copy,
        never for another process's indexing; the log is emptied after the commit, so a
        process killed in between leaves lines that are taken again, harmlessly."""
        if not reset and not waiting(self.store, at_all=True):
            return  # nothing new: no write lock taken
        db.execute("BEGIN IMMEDIATE")
        try:
            with taking(self.store) as noted:
                if reset:
                    with contextlib.suppress(FileNotFoundError):
                        remove(self._stale_path())
                    for table in ("messages", "words", "pending"):
                        db.execute(f"DELETE FROM {table}")
                    db.executemany("INSERT OR IGNORE INTO pending VALUES (?, ?)", stored)
                db.executemany("INSERT OR IGNORE INTO pending VALUES (?, ?)",
                               ((i, " ".join(places)) for i, places in noted))
                db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            if reset:
                mark_stale(self.store)  # whatever was removed, the next search rebuilds
            raise

    def _index_pending(self, db: sqlite3.Connection, deadline: float | None) -> None:
        """Index pending messages, oldest first, :data:`BATCH` to a transaction (each
        batch adds its messages and forgets their pending rows at once, so a process
        killed between batches leaves the rest pending, and one killed inside a batch
        leaves it whole), until none is left or ``deadline`` (``time.monotonic``) passed (one batch
        at least).
        An id already indexed is skipped, so nothing is ever indexed twice."""
        while True:  # one batch at least, so every search moves the work on
            with _transaction(db):
                rows = db.execute("SELECT id, places FROM pending ORDER BY id LIMIT ?",
                                  (BATCH,)).fetchall()
                if not rows:
                    return
                _add(db, (m for m in (self._load(message_id, places.split())
                                      for message_id, places in rows) if m is not None))
                db.executemany("DELETE FROM pending WHERE id = ?", ((r[0],) for r in rows))
            if deadline is not None and time.monotonic() >= deadline:
                return

    def _load(self, message_id: str, places: list[str]) -> Message | None:
        """The noted message from the first place that still has it, else from the
        archive; ``None`` if none does (retracted, or a marker that names nothing
        readable)."""
        if not is_id(message_id):
            return None  # a hand-made line: never a path part
        for place in places:
            if place != BROADCAST and not is_valid_name(place):
                continue
            with contextlib.suppress(MailslotError):
                if place == BROADCAST:
                    return self.store.load_broadcast(message_id)[0]
                return self.store.load(place, message_id)[0]
        with contextlib.suppress(MailslotError):
            for _, message in self.archives.archived(message_id):
                return message
        return None

    def _stored(self) -> Iterator[tuple[str, str]]:
        """Every message in the store (and its archive) with the place to read it from,
        each once: what a rebuild makes pending."""
        store = self.store
        where: dict[str, str] = {}
        for name in self._agents():
            for message_id, _ in store.entries(name, STATES):
                where.setdefault(message_id, name)
        for live in (True, False):
            for message_id in store.broadcast_ids(live=live):
                where.setdefault(message_id, BROADCAST)
        for message_id in self.archives.archived_ids():
            where.setdefault(message_id, "")  # no place: read from the archive
        return iter(where.items())

    def catch_up(self, seconds: float | None) -> int:
        """Index what was delivered since (and rebuild first if the index is stale or
        missing), for at most about ``seconds`` (``None``: until done); return how many
        messages are still not searchable. Another process indexing now (the lock held
        past the busy timeout) leaves the work to it."""
        if not self.store.exists():
            return 0
        with self._lock:
            return self._catch_up(seconds)

    def _catch_up(self, seconds: float | None) -> int:
        deadline = None if seconds is None else time.monotonic() + seconds
        try:
            try:
                db = self._ready()
                self._note(db)
                self._index_pending(db, deadline)
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc):
                    raise
        except sqlite3.DatabaseError:
            self._discard()  # damaged since it was opened: replaced from the files
            db = self._ready()
            self._index_pending(db, deadline)
        return self.unsearched()

    def _ready(self) -> sqlite3.Connection:
        """The index, made again from the files (everything pending) if it is stale,
        missing or a file SQLite cannot read."""
        try:
            fresh = os.path.lexists(self._stale_path()) or self._connect(create=False) is None
        except sqlite3.DatabaseError:
            self._discard()
            fresh = True
        db = self._connect(create=True)
        assert db is not None
        if fresh:
            self._note(db, self._stored(), reset=True)
        return db

    def unsearched(self) -> int:
        """How many delivered messages a search does not cover yet (pending, or still in
        ``index/new.log``)."""
        waiting_lines = waiting(self.store)
        try:
            db = self._connect(create=False)
            if db is None:
                return waiting_lines
            pending: int = db.execute("SELECT count(*) FROM pending").fetchone()[0]
        except sqlite3.Error:
            return waiting_lines
        return pending + waiting_lines

    def rebuild(self) -> int:
        """Build the index again from the files, to the end (deliveries meanwhile are not
        held up); return how many messages it holds. A file SQLite cannot read (damaged,
        not a database) is replaced by a new one."""
        with self._lock:
            return self._rebuild()

    def _rebuild(self) -> int:
        for _ in range(2):
            try:
                db = self._connect(create=True)
                assert db is not None
                self._note(db, self._stored(), reset=True)
                self._index_pending(db, None)
                count: int = db.execute("SELECT count(*) FROM messages").fetchone()[0]
                return count
            except sqlite3.OperationalError as exc:
                if "locked" in str(exc):
                    raise StoreError("the search index is busy (another process is "
                                     "writing it); try again") from None
                self._discard()
            except sqlite3.DatabaseError:
                self._discard()
        raise StoreError("cannot rebuild the search index; try again")

    def _discard(self) -> None:
        """Close and delete a damaged index file (it is derived: nothing is lost)."""
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
            self._db = None
        for suffix in ("", "-journal"):
            with contextlib.suppress(FileNotFoundError):
                remove(os.path.join(self._folder(), INDEX_FILE + suffix))

    def search(self, request: Search) -> list[str]:
        """Ids of the messages ``request`` finds: best first with words, else oldest
        first. Catches up for at most :data:`CATCH_UP_SECONDS` first; what is left is
        not searched (:meth:`unsearched` says how much)."""
        if not self.store.exists():
            return []
        with self._lock:
            self._catch_up(CATCH_UP_SECONDS)
            db = self._connect(create=False)
            if db is None:
                return []
            sql, params = _select(request)
            try:
                return [row[0] for row in db.execute(sql, params)]
            except sqlite3.Error as exc:
                raise StoreError(f"the search index cannot answer ({exc}); run mailslot "
                                 "index --rebuild") from None


@contextlib.contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[None]:
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _add(db: sqlite3.Connection, messages: Iterable[Message]) -> None:
    for m in messages:
        row = db.execute(
            "INSERT OR IGNORE INTO messages(id, sender, recipients, utc, thread) "
            "VALUES (?, ?, ?, ?, ?)",
            (m.id, m.sender, " " + " ".join(m.to) + " ", utc(m.date), m.thread or m.id))
        if row.rowcount == 1:
            db.execute("INSERT INTO words(rowid, subject, body) VALUES (?, ?, ?)",
                       (row.lastrowid, m.subject, m.body))


def _select(request: Search) -> tuple[str, list[object]]:
    """The query for ``request``: filters on ``messages``, words through ``words``."""
    where: list[str] = []
    params: list[object] = []
    if request.match is not None:
        where.append("words MATCH ?")
        params.append(fts(request.match))
    if request.reader is not None:
        seen_by = ["m.recipients LIKE ?", "m.recipients = ' all '"]
        params.append(f"% {request.reader} %")
        if request.sent:
            seen_by.append("m.sender = ?")
            params.append(request.reader)
        where.append("(" + " OR ".join(seen_by) + ")")
    for clause, value in (("m.sender = ?", request.sender),
                          ("m.recipients LIKE ?",
                           None if request.recipient is None else f"% {request.recipient} %"),
                          ("m.utc >= ?", request.since), ("m.utc < ?", request.until),
                          ("m.thread = ?", request.thread)):
        if value is not None:
            where.append(clause)
            params.append(value)
    if request.match is not None:
        # The newest CANDIDATES matches (the index's rowids follow time), then ranked.
        sql = ("SELECT id FROM (SELECT m.id, m.utc, bm25(words, 4.0, 1.0) AS score "
               "FROM words JOIN messages m ON m.n = words.rowid WHERE " + " AND ".join(where)
               + f" ORDER BY words.rowid DESC LIMIT {CANDIDATES}) ORDER BY score, utc DESC")
    else:
        sql = ("SELECT m.id FROM messages m" + (" WHERE " + " AND ".join(where) if where
                                                 else "") + " ORDER BY m.utc, m.id")
    sql += " LIMIT ? OFFSET ?"
    params += [request.limit, request.offset]
    return sql, params
