"""Messages delivered but not yet in the search index: ``index/new.log``.

A send does not write the index itself. Opening SQLite and writing the index cost a send
about a third of its time, and loaded ``sqlite3`` into every ``mailslot send``.
Instead a send appends one line to this log: the message id and the mailboxes it went to
(:data:`BROADCAST` for a broadcast), separated by spaces (neither holds one). The next
search takes the lines, adds those messages to the index, oldest first, and answers
(:mod:`mailslot.store.files.search_index`). One file appended to, rather than a file per
message: a new file per send made the next send's sync write a new inode and a folder
entry too, a quarter of a raw send's cost; a line adds a few per cent.

Appends share a lock (``flock``, shared) and a search takes the lines under the
exclusive lock, then empties the file, so no line appended meanwhile is lost; the lock
is held for a read and a truncate, never while the index is written, so a send never
waits for a search. A line that cannot be written (a full disk, a planted link) marks
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
from .fs import APPEND, LOCK, read_open

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


def take(store: Folders) -> list[tuple[str, list[str]]]:
    """Empty the log and return its ``(message id, places)``, oldest first (ids sort by
    time). A line cut short (a writer killed mid-write) is dropped."""
    path = os.path.join(store._folder(INDEX_FOLDER), LOG_FILE)
    try:
        fd = open_file(path, LOCK)
    except FileNotFoundError:
        return []
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        raw = read_open(fd)
        if raw:
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # the lock goes with it
    lines = raw.decode("utf-8", "replace").split("\n")[:-1]  # the last is "" or cut
    noted = [(words[0], words[1:]) for words in map(str.split, lines) if words]
    return sorted(noted)
