"""Messages delivered but not yet in the search index: ``index/new.log``.

A send does not write the index itself. Opening SQLite and writing the index cost a send
about a third of its time, and loaded ``sqlite3`` into every ``mailslot send``.
Instead a send appends one line to this log: the message id and the mailboxes it went to
(:data:`BROADCAST` for a broadcast), separated by spaces (neither holds one). The next
search (or a running watcher) moves the lines into the index's list of pending messages,
then indexes them oldest first for at most a moment and answers, saying how many newest
messages it did not search yet (:mod:`mailslot.backends.files.search_index`). One file
appended to, rather than a file per message: a new file per send made the next send's
sync write a new inode and a folder entry too, a quarter of a raw send's cost; a line
adds a few per cent.

Appends share a lock (``flock``, shared) and a search takes the lines under the
exclusive lock, copies them into the index in one short transaction, then empties the
file, so no line appended meanwhile is lost and a killed search leaves them in place;
the lock is held for a read, that copy and a truncate (a few milliseconds for thousands
of lines), never while messages are read or indexed, so a send barely waits for a
search. A line that cannot be written (a full disk, a planted link) marks
the whole index stale instead, and the next search rebuilds it from the messages. Either
way the send succeeds: the index is derived, the messages are the truth.

The log is not synced: after a power loss its last lines may be missing, and ``mailslot
index --rebuild`` (or any later stale marker) brings those messages back into the index.
"""

from __future__ import annotations

import fcntl
import os

from ...core.durable import open_file
from ...core.errors import MailslotError
from .fs import APPEND, LOCK, read_file, read_open

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from .fs import Folders

INDEX_FOLDER = "index"
LOG_FILE = "new.log"
STALE_FILE = "stale"
BROADCAST = "*"
"""The place of a broadcast (never an agent name: names hold no ``*``)."""


def leave(store: Folders, message_id: str, places: Iterable[str]) -> None:
    """Note that ``message_id`` (delivered to ``places``) is not indexed yet. Never
    raises: on any failure the index is marked stale instead."""
    line = " ".join([message_id, *places]) + "\n"
    try:
        fd = open_file(os.path.join(store._folder(INDEX_FOLDER, create=True), LOG_FILE),
                       APPEND)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)  # a search taking the lines waits for this one
            os.write(fd, line.encode())
        finally:
            os.close(fd)
    except (OSError, MailslotError):
        mark_stale(store)


def mark_stale(store: Folders) -> None:
    """Leave ``index/stale``: the next search rebuilds the index from the messages."""
    try:
        path = os.path.join(store._folder(INDEX_FOLDER, create=True), STALE_FILE)
        os.close(open_file(path, APPEND))
    except (OSError, MailslotError):
        return  # nothing more can be done; the message itself is delivered


class taking:  # a context manager used as a function: ``with taking(store) as noted``
    """The log's ``(message id, places)``, oldest first (ids sort by time), held under
    the exclusive lock while the caller keeps them (the index's ``pending`` table, in a
    transaction committed inside the block); the log is emptied only when the block ends
    without an error. A process killed inside the block leaves the lines in the log, to
    be taken again (keeping is idempotent). A line cut short (a writer killed mid-write)
    is dropped. A class, not ``contextlib``: this module is on the send and hook path."""

    def __init__(self, store: Folders) -> None:
        self._path = os.path.join(store._folder(INDEX_FOLDER), LOG_FILE)
        self._fd = -1
        self._raw = b""

    def __enter__(self) -> list[tuple[str, list[str]]]:
        try:
            self._fd = open_file(self._path, LOCK)
        except FileNotFoundError:
            return []
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            self._raw = read_open(self._fd)
        except BaseException:
            os.close(self._fd)
            raise
        lines = self._raw.decode("utf-8", "replace").split("\n")[:-1]  # last: "" or cut
        return sorted((words[0], words[1:]) for words in map(str.split, lines) if words)

    def __exit__(self, kind: object, *rest: object) -> None:
        if self._fd < 0:
            return
        try:
            if kind is None and self._raw:
                os.ftruncate(self._fd, 0)
        finally:
            os.close(self._fd)  # the lock goes with it


def waiting(store: Folders, *, at_all: bool = False) -> int:
    """How many lines the log holds (messages no search has taken yet); with
    ``at_all``, only whether it holds any (1 or 0, from its size). Never raises."""
    try:
        path = os.path.join(store._folder(INDEX_FOLDER), LOG_FILE)
        if at_all:
            return int(os.lstat(path).st_size > 0)
        return read_file(path).count(b"\n")
    except (OSError, MailslotError):
        return 0
