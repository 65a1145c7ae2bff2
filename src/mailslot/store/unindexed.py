"""Messages delivered but not yet in the search index: ``index/new/``.

A send does not write the index itself. Opening SQLite and writing the index cost a send
about a third of its time, and loaded ``sqlite3`` into every ``mailslot send`` (issue 11).
Instead a send leaves one small file here, named for the message id, holding the
mailboxes the message went to (:data:`BROADCAST` for a broadcast), one a line. The next
search adds those messages to the index, oldest first, and then removes their files
(:mod:`mailslot.store.search_index`). A file that cannot be left (a full disk, a planted
link) marks the whole index stale instead, so the next search rebuilds it from the
messages. Either way the send succeeds: the index is derived, the messages are the truth.

The files are not synced: after a power loss a marker may be missing, and ``mailslot
index --rebuild`` (or any later stale marker) brings the message back into the index.
"""

from __future__ import annotations

import os

from ..errors import MailslotError
from .fs import APPEND, file_names, open_file, read_file, remove, write_new

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from .fs import Folders

INDEX_FOLDER = "index"
NEW_FOLDER = "new"
STALE_FILE = "stale"
BROADCAST = "*"
"""The place of a broadcast (never an agent name: names hold no ``*``)."""


def leave(store: Folders, message_id: str, places: Iterable[str]) -> None:
    """Note that ``message_id`` (delivered to ``places``) is not indexed yet. Never
    raises: on any failure the index is marked stale instead."""
    try:
        folder = store._folder(INDEX_FOLDER, NEW_FOLDER, create=True)
        write_new(os.path.join(folder, message_id), "\n".join(places).encode(), sync=False)
    except FileExistsError:
        return  # already noted (an import delivering the same id again)
    except (OSError, MailslotError):
        mark_stale(store)


def mark_stale(store: Folders) -> None:
    """Leave ``index/stale``: the next search rebuilds the index from the messages."""
    try:
        path = os.path.join(store._folder(INDEX_FOLDER, create=True), STALE_FILE)
        os.close(open_file(path, APPEND))
    except (OSError, MailslotError):
        return  # nothing more can be done; the message itself is delivered


def waiting(store: Folders) -> list[tuple[str, list[str]]]:
    """``(message id, places)`` for every message noted and not indexed yet, oldest
    first (ids sort by time). A marker that cannot be read names no place."""
    folder = store._folder(INDEX_FOLDER, NEW_FOLDER)
    noted = []
    for name in sorted(file_names(folder)):
        try:
            places = read_file(os.path.join(folder, name)).decode("utf-8", "replace").split()
        except (OSError, MailslotError):
            places = []
        noted.append((name, places))
    return noted


def indexed(store: Folders, message_ids: Iterable[str]) -> None:
    """Remove the markers of messages now in the index."""
    folder = store._folder(INDEX_FOLDER, NEW_FOLDER)
    for message_id in message_ids:
        remove(os.path.join(folder, message_id))
