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

from ...core.durable import CREATE, remove
from ...core.errors import MailslotError, NotFound, StoreError, Unreadable, UnsafePath
from ...core.message import STATES
from ...core.query import All, Any, Not, Search, Term, utc
from .unindexed import BROADCAST, STALE_FILE, mark_stale, take

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

    from ...core.message import Message
    from ...core.query import Node
    from .layout import MailboxFiles

INDEX_FILE = "search.sqlite"
_BUSY_MS = 2000
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

    def __init__(self, store: MailboxFiles, agents: Callable[[], list[str]]) -> None:
        self.store = store
        self._agents = agents
        self._db: sqlite3.Connection | None = None

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

    def _catch_up(self, db: sqlite3.Connection) -> None:
        """Add the messages delivered since the last search (the lines of
        ``index/new.log``), oldest first. The lines are taken once SQLite's write lock is
        held, so a busy index leaves them for the next search; if adding them fails
        after that, the index is marked stale and rebuilt from the files."""
        noted: list[tuple[str, list[str]]] = []
        try:
            with _transaction(db):
                noted = take(self.store)
                _add(db, (m for m in (self._load(message_id, places)
                                      for message_id, places in noted) if m is not None))
        except BaseException:
            if noted:
                mark_stale(self.store)
            raise

    def _load(self, message_id: str, places: list[str]) -> Message | None:
        """The noted message from the first place that still has it; ``None`` if none
        does (retracted, or a marker that names nothing readable)."""
        for place in places:
            with contextlib.suppress(MailslotError):
                if place == BROADCAST:
                    return self.store.load_broadcast(message_id)[0]
                return self.store.load(place, message_id)[0]
        return None

    def _stored(self) -> Iterator[Message]:
        """Every readable message in the store, each once, oldest first (so the index's
        own order is the order of time, which ranking relies on)."""
        store = self.store
        where: dict[str, str | None] = {}
        for name in self._agents():
            for message_id, _ in store.entries(name, STATES):
                where.setdefault(message_id, name)
        for live in (True, False):
            for message_id in store.broadcast_ids(live=live):
                where.setdefault(message_id, None)
        for message_id in sorted(where):
            agent = where[message_id]
            with contextlib.suppress(NotFound, Unreadable, UnsafePath):
                if agent is None:
                    yield store.load_broadcast(message_id)[0]
                else:
                    yield store.load(agent, message_id)[0]

    def rebuild(self) -> int:
        """Build the index again from the files, in one transaction (deliveries meanwhile
        are not held up: their lines wait for the next search); return how many messages
        it holds. A file SQLite
        cannot read (damaged, not a database) is replaced by a new one."""
        try:
            return self._rebuild()
        except sqlite3.DatabaseError:
            self._discard()
        try:
            return self._rebuild()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot rebuild the search index ({exc}); try again") from None

    def _rebuild(self) -> int:
        db = self._connect(create=True)
        assert db is not None
        try:
            with _transaction(db):
                take(self.store)  # before the files are read: each noted message is there
                with contextlib.suppress(FileNotFoundError):
                    remove(self._stale_path())
                db.execute("DELETE FROM messages")
                db.execute("DELETE FROM words")
                _add(db, self._stored())
                count: int = db.execute("SELECT count(*) FROM messages").fetchone()[0]
        except BaseException:
            mark_stale(self.store)  # whatever was taken or removed, the next search rebuilds
            raise
        return count

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
        """Ids of the messages ``request`` finds: best first with words, else oldest first."""
        if not self.store.exists():
            return []
        try:
            fresh = os.path.lexists(self._stale_path()) or self._connect(create=False) is None
        except sqlite3.Error:
            fresh = True  # damaged: rebuild replaces it
        if fresh:
            self.rebuild()
        db = self._connect(create=False)
        assert db is not None
        try:
            self._catch_up(db)
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                raise StoreError("the search index is busy (another process is writing "
                                 "it); try again") from None
            self.rebuild()  # damaged since it was opened: replaced from the files
            db = self._connect(create=False)
            assert db is not None
        sql, params = _select(request)
        try:
            return [row[0] for row in db.execute(sql, params)]
        except sqlite3.Error as exc:
            raise StoreError(f"the search index cannot answer ({exc}); run mailslot index "
                             "--rebuild") from None


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
