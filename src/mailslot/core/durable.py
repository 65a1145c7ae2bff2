"""Touching a file anywhere without following a planted link, and making it durable.

The rules every writer of a file in mailslot shares, whether the file is in the file
store's folder or outside any store (a backup being restored, a notice bank): a file is
opened without following a symlink and must be a regular file, a new one is created
``0600`` with ``O_EXCL`` (never over another), and a folder's entries are fsynced once
a rename or a link must survive a crash. :mod:`mailslot.store.files.fs` builds the file
store's rules on these. On the hook path: it imports only ``os``, ``stat``, ``errno``
and mailslot's errors.
"""

from __future__ import annotations

import errno
import os
import stat

from .errors import UnsafePath

FILE_MODE = 0o600
CLOEXEC = getattr(os, "O_CLOEXEC", 0)
CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | CLOEXEC
"""The flags of a new file: never over an existing one, never through a link."""


def not_followed(path: str) -> UnsafePath:
    """The error for a symlink found where mailslot expects a file or a folder."""
    return UnsafePath(f"{path} is a symlink; mailslot does not follow links")


def not_regular(path: str) -> UnsafePath:
    """The error for a folder, FIFO, socket or device found where a file belongs."""
    return UnsafePath(f"{path} is not a regular file")


def open_file(path: str, flags: int) -> int:
    """``os.open`` of a regular file, never through a symlink (new files ``0600``).

    Raises :class:`UnsafePath` for a link or a file that is not regular, and the
    ``OSError`` otherwise (``FileNotFoundError``, ``FileExistsError``...).
    """
    try:
        fd = os.open(path, flags, FILE_MODE)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise not_followed(path) from None
        if exc.errno in (errno.ENXIO, errno.ENODEV):  # a socket, or a device without one
            raise not_regular(path) from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise not_regular(path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def remove(path: str) -> bool:
    """Unlink ``path`` (a link itself, never its target); ``False`` if already gone."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    return True


def make_folders(path: str) -> None:
    """``path`` and every missing folder above it, each made ``0700``: ``os.makedirs``
    gives the ones above the last the default mode (``0755``), so a mailbox made on the
    way to one of its folders would be open to every user. One made meanwhile by
    another process is fine; a file in the way raises ``FileExistsError``."""
    missing = []
    folder = os.path.abspath(path)
    while not os.path.isdir(folder):
        missing.append(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            if not os.path.isdir(folder):
                raise


def fsync_dir(path: str) -> None:
    """Make the folder's entries (a link, a rename) durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_file(path: str, text: str, mode: int = FILE_MODE) -> None:
    """``path`` becomes ``text``, whole or not at all: a new file beside it (created
    ``0600``, then given ``mode``), synced, renamed over it. Raises ``OSError``; nothing
    is left beside it."""
    import tempfile  # only writers of whole files need it (never a hook)

    folder, name = os.path.split(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".mailslot", dir=folder or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        if mode != FILE_MODE:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        remove(tmp)
        raise
