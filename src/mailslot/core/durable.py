"""Touching a file anywhere without following a planted link, and making it durable.

The rules every reader and writer of a file in mailslot shares, whether the file is in
the file store's folder or outside any store (the watcher's record, a credential, a
backup being restored, a notice bank): a file is opened only through :func:`open_file`,
which never follows a symlink, never waits (a FIFO planted where a record belongs is
refused at once, not read), and accepts only a regular file; a new one is created
``0600`` with ``O_EXCL`` (never over another), and a folder's entries are fsynced once
a rename or a link must survive a crash. A folder mailslot keeps its own files in is
checked by :func:`check_folder` (no link, this user's, writable by no one else).
:mod:`mailslot.backends.files.fs` builds the file store's rules on these. On the hook
path: it imports only ``os``, ``stat``, ``errno`` and mailslot's errors.
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
ALWAYS = os.O_NOFOLLOW | os.O_NONBLOCK | CLOEXEC
"""Added to every :func:`open_file`: no link followed, no wait for a FIFO's other end
(a reader or a writer), no descriptor left to a child. On a regular file
``O_NONBLOCK`` changes nothing (and ``flock`` waits as asked whatever it says)."""


def not_followed(path: str) -> UnsafePath:
    """The error for a symlink found where mailslot expects a file or a folder."""
    return UnsafePath(f"{path} is a symlink; mailslot does not follow links")


def not_regular(path: str) -> UnsafePath:
    """The error for a folder, FIFO, socket or device found where a file belongs."""
    return UnsafePath(f"{path} is not a regular file")


def open_file(path: str, flags: int, *, follow: bool = False) -> int:
    """``os.open`` of a regular file, never through a symlink and never waiting (new
    files ``0600``): the one way mailslot opens a file it reads or writes.

    Raises :class:`UnsafePath` for a link or a file that is not regular (a FIFO, a
    socket, a device, a folder), and the ``OSError`` otherwise (``FileNotFoundError``,
    ``FileExistsError``...). ``follow``: a link is followed (only for a person's own
    settings outside any mailbox, which a dotfile manager may keep as links), and what
    it leads to must still be a regular file.
    """
    try:
        fd = os.open(path, (flags | ALWAYS) & ~os.O_NOFOLLOW if follow else flags | ALWAYS,
                     FILE_MODE)
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


def read_file(path: str, limit: int | None = None, *, follow: bool = False) -> bytes:
    """The whole of a regular file (at most ``limit`` bytes), opened by :func:`open_file`:
    a link (unless ``follow``), FIFO or device is :class:`UnsafePath` at once, never
    waited on."""
    fd = open_file(path, os.O_RDONLY, follow=follow)
    try:
        return read_open(fd, limit)
    finally:
        os.close(fd)


def read_open(fd: int, limit: int | None = None) -> bytes:
    """What is left in an open file (at most ``limit`` bytes)."""
    chunks: list[bytes] = []
    left = -1 if limit is None else limit
    while left and (chunk := os.read(fd, _CHUNK if left < 0 else min(left, _CHUNK))):
        chunks.append(chunk)
        left = left - len(chunk) if left > 0 else left
    return b"".join(chunks)


_CHUNK = 1 << 20


def unsafe_owner(path: str, info: os.stat_result) -> str | None:
    """Why a folder mailslot keeps files in is not safe to use, or ``None``.

    Like ssh's StrictModes: a folder another user owns, or one group or others may
    write to, would let someone else plant files (mail "from" anyone, a record).
    """
    if info.st_uid != os.geteuid():
        return (f"{path} belongs to another user (uid {info.st_uid}); mailslot only uses "
                "a mailbox you own (choose another --dir or MAILSLOT_DIR)")
    if info.st_mode & 0o022:
        return (f"{path} can be written by other users (mode "
                f"{stat.S_IMODE(info.st_mode):o}); run: chmod 700 {path}")
    return None


def check_folder(path: str) -> None:
    """Raise :class:`UnsafePath` unless ``path`` is a real folder (not a link) of this
    user's that no one else may write; ``FileNotFoundError`` when it is absent."""
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        raise not_followed(path)
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafePath(f"{path} should be a folder")
    why = unsafe_owner(path, info)
    if why is not None:
        raise UnsafePath(why)


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


def any_json_holds(folder: str, needle: bytes) -> bool:
    """Does any ``*.json`` file of ``folder`` hold ``needle`` in its first 64 KiB? Read
    raw, unchecked, never waiting (no link followed, a fifo not waited on): only a cheap
    look at whether a checked read is worth its cost (a host's registry of sessions, for
    a bridge's mark)."""
    try:
        names = [n for n in os.listdir(folder) if n.endswith(".json")]
    except OSError:
        return False
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
    for name in names:
        try:
            fd = os.open(os.path.join(folder, name), flags)
        except OSError:
            continue
        try:
            if needle in os.read(fd, 1 << 16):
                return True
        except OSError:
            continue
        finally:
            os.close(fd)
    return False
