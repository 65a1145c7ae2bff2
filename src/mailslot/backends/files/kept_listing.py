"""Kept listings of the open mail folders, so that a reader lists a folder once per change::

    tally/<agent>.unread.ids    "# listing <inode> <mtime_ns> <count>", then the ids, sorted
    tally/<agent>.read.ids

An agent that reads its mail but never marks it done keeps thousands of messages in
``cur/``; listing that folder is most of what ``inbox``, the session-start hook and
``who`` cost then. A reader that finds a folder's listing stale lists the folder and,
once the folder has been still for :data:`SETTLED_NS`, writes what it found with the
folder's stamp (its inode and modification time, taken before the listing), if the
folder holds message files alone (a stray file or a link there is for ``doctor`` to
see, so such a folder is listed every time). Any later change of the folder (a
delivery, a move, a file put there by hand) moves the folder's time past the stamp,
whatever the file system clock's tick, because the stamp is at least that old: the
next reader lists again. Nobody updates a listing as mail moves, so a send pays
nothing for it. A listing is a cache: replaced whole (tmp + rename), never synced; one
torn, missing or not matching is ignored.

It is trusted as the folder it lists is (both are in the owner's 0700 mailbox), with
one check that costs a single pass in C: a listing holding any byte no id holds is
ignored whole, so a planted one can name no path outside its folder and put no
control character or markup in what mailslot prints (each id is then read as
``<folder>/<id>.md``, whose header must name that id). ``os`` only: the hook path
loads this module.
"""

from __future__ import annotations

import heapq
import os
import time

from ...core.durable import open_file, remove
from ...core.errors import MailslotError
from .fs import READ, ids_in, read_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

SETTLED_NS = 2_000_000_000
"""How long a folder must have been unchanged before its listing is kept: far longer
than any file system's clock tick, so a change after it is always seen."""
HEAD = b"# listing"
_HEAD_BYTES = 4096  # the first line and a few ids: what a count needs
_ID_BYTES = b"0123456789abcdefghijklmnopqrstuvwxyz-_.+\n"
"""Every byte an id may hold (``core.ids.ID_PATTERN``) and the line break."""


def stamp_of(folder: str) -> tuple[int, int] | None:
    """The folder's inode and modification time, or ``None`` when it does not exist."""
    try:
        info = os.lstat(folder)
    except FileNotFoundError:
        return None
    return info.st_ino, info.st_mtime_ns


def read_kept(path: str, stamp: tuple[int, int], want: int | None = None
              ) -> tuple[int, list[str]] | None:
    """The count and the ``want`` oldest ids (all with ``None``) of the listing at
    ``path`` if it was written with ``stamp``; ``None`` otherwise. With a small
    ``want`` only the file's first few kilobytes are read."""
    try:
        if want is not None and want * 80 < _HEAD_BYTES:
            fd = open_file(path, READ)
            try:
                data = os.read(fd, _HEAD_BYTES)
            finally:
                os.close(fd)
        else:
            data = read_file(path)
    except (OSError, MailslotError):
        return None
    head, _, body = data.partition(b"\n")
    parts = head.split(b" ")
    if len(parts) != 5 or b" ".join(parts[:2]) != HEAD or body.translate(None, _ID_BYTES):
        return None  # not a listing, or a line no id could be: believe none of it
    try:
        kept = (int(parts[2]), int(parts[3]))
        count = int(parts[4])
    except ValueError:
        return None
    if kept != stamp or count < 0:
        return None
    lines = body.decode("utf-8", "replace").split("\n")
    if len(data) < _HEAD_BYTES or want is None:  # the whole file: it must be whole
        if lines[-1] != "" or len(lines) - 1 != count:
            return None
        lines.pop()
    elif len(lines) - 1 < min(want, count):  # longer ids than guessed: read it all
        found = read_kept(path, stamp)
        return None if found is None else (found[0], found[1][:want])
    return count, lines[:count if want is None else min(want, count)]


def listing(folder: str, path: str | None, stage: Callable[[bytes], str],
            want: int | None = None) -> tuple[int, list[str]]:
    """How many ids ``folder`` holds and the ``want`` oldest of them (all, sorted,
    with ``None``): from the listing at ``path`` when it matches, else listed (and
    kept for the next reader once the folder is settled; never with ``path`` None, for
    a name unsafe as a file name). ``stage`` writes bytes to a new file of the mailbox
    and returns its path, to be renamed to ``path``."""
    stamp = stamp_of(folder)
    if stamp is None:
        return 0, []
    kept = None if path is None else read_kept(path, stamp, want)
    if kept is not None:
        return kept
    ids = ids_in(folder)
    settled = time.time_ns() - stamp[1] >= SETTLED_NS
    if want is not None and (path is None or not settled):  # nothing to keep
        return len(ids), heapq.nsmallest(want, ids)
    ids.sort()
    # Kept only of a folder that held message files alone and did not change while
    # listed: ``doctor`` then checks the newest files by it, with nothing to miss.
    if path is not None and settled and _only_messages(folder, len(ids)) \
            and stamp_of(folder) == stamp:
        _keep(path, stamp, ids, stage)
    return len(ids), ids if want is None else ids[:want]


def _only_messages(folder: str, ids: int) -> bool:
    try:
        return len(os.listdir(folder)) == ids
    except OSError:
        return False


def _keep(path: str, stamp: tuple[int, int], ids: list[str],
          stage: Callable[[bytes], str]) -> None:
    """Write the listing (best effort: a reader that cannot write just lists)."""
    lines = [f"{HEAD.decode()} {stamp[0]} {stamp[1]} {len(ids)}", *ids, ""]
    try:
        staged = stage("\n".join(lines).encode())
    except (OSError, MailslotError):
        return
    try:
        os.rename(staged, path)
    except OSError:
        try:
            remove(staged)
        except OSError:
            return
