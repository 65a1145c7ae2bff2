"""How mailslot touches a file inside the mailbox: every such rule, in one place.

* Nothing is reached through a symlink: files are opened with ``O_NOFOLLOW``, and
  :class:`Folders` checks every folder under the root, part by part, with ``lstat``.
* Only regular files are read, appended to or locked, and opening one never waits: a
  FIFO or device planted where a file belongs is refused (``O_NONBLOCK``, then
  ``fstat``: :func:`~mailslot.core.durable.open_file`) rather than hanging the reader
  or the writer.
* Folders are created ``0700``, files ``0600``; a folder another user owns, or one
  group or others may write to, is refused (like ssh's StrictModes).
* A new file is created with ``O_EXCL`` (never overwriting) and written whole; if
  writing fails it is removed again, so no half file is left behind.
* A record is appended in one ``write`` with ``O_APPEND``, so concurrent lines never
  interleave.
* Every ``OSError`` becomes one :class:`StoreError` line at the file store's public
  methods (:func:`translated`).

The rules that hold for any file mailslot writes, inside a store or not (opening
without following a link, exclusive create, a folder's fsync), are
:mod:`mailslot.core.durable`'s; this module builds the file store's on them. Used by every
part of :class:`~mailslot.backends.files.file_store.FileStore`. It is on the hook path,
which must start in a few milliseconds, so it imports only ``os``, ``stat``, ``errno``,
``time`` and mailslot's foundation (see docs/hooks.md, "Speed").
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import time

from ...core.durable import (
    CLOEXEC,
    CREATE,
    fsync_dir,
    make_folders,
    not_followed,
    open_file,
    remove,
    unsafe_owner,
)
from ...core.durable import read_open as read_rest
from ...core.errors import StoreError, UnsafePath
from ...core.ids import ids_of_files
from ...core.message import MAX_HEADER_BYTES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any, TypeVar

    T = TypeVar("T")

DIR_MODE = 0o700
READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | CLOEXEC
APPEND = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | CLOEXEC
LOCK = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | CLOEXEC
RECHECK_SECONDS = 1.0
"""How long a folder's check (no link, a folder, owned by this user) is trusted."""
_HEAD_CHUNK = 4096
_CHUNK = 1 << 20
_TAIL_CHUNK = 16 << 10


def store_error(exc: OSError, what: str) -> StoreError:
    """One line for a failed file operation: the place, the cause, what to do."""
    where = f" ({exc.filename})" if exc.filename else ""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return StoreError(f"{what}: the disk is full{where}; free some space and try "
                          "again (nothing was written)")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return StoreError(f"{what}: permission denied{where}; the mailbox must belong to "
                          "you (check its owner and mode, or run mailslot doctor)")
    if exc.errno == errno.EROFS:
        return StoreError(f"{what}: the mailbox is on a read-only file system{where}")
    if exc.errno == errno.ELOOP:
        return not_followed(exc.filename or what)
    return StoreError(f"{what}: {exc.strerror or exc}{where}")


def translated(cls: type[T]) -> type[T]:
    """``cls`` with every public method of its own parts turning an ``OSError`` into a
    :class:`StoreError`.

    The store's promise (see :mod:`mailslot.store.primitives`): no ``OSError`` reaches
    the service or a front end, whichever call failed deep inside. The methods it
    inherits from :class:`~mailslot.store.base.Store` touch no file themselves: they
    call the primitives, which are translated here.
    """
    here = __name__.rpartition(".")[0]
    done: set[str] = set()
    for part in cls.__mro__:
        if part.__module__.startswith(here):
            for name, method in list(vars(part).items()):
                if name.startswith("_") or name in done or not callable(method) \
                        or isinstance(method, type):
                    continue
                done.add(name)
                setattr(cls, name, _guarded(getattr(cls, name), name))
    return cls


def _guarded(method: Callable[..., Any], name: str) -> Callable[..., Any]:
    what = f"cannot {name.replace('_', ' ')}"

    def guarded(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except OSError as exc:
            raise store_error(exc, what) from None

    guarded.__name__ = guarded.__qualname__ = name
    guarded.__doc__ = method.__doc__
    return guarded


def read_file(path: str, *, header_only: bool = False) -> bytes:
    """A whole file, or with ``header_only`` about enough for a message's header.

    A header read stops at the closing ``---`` line or after :data:`MAX_HEADER_BYTES`,
    whichever comes first, and looks at each byte once: a file without a closing line
    costs one bounded read, however large it is.
    """
    fd = open_file(path, READ)
    try:
        return read_open(fd, header_only=header_only)
    finally:
        os.close(fd)


def lines_from_end(path: str) -> Iterator[bytes]:
    """The non-empty lines of the file at ``path``, last first, read from its end in
    growing blocks: a reader that stops after a few lines reads a few kilobytes however
    long the file is. Opened (and refused, or ``FileNotFoundError``) now, before the
    first line is asked for; closed when the lines run out or are dropped."""
    fd = open_file(path, READ)
    return _lines_back(fd)


def _lines_back(fd: int) -> Iterator[bytes]:
    try:
        end = os.fstat(fd).st_size
        block, cut = _TAIL_CHUNK, b""
        while end > 0:
            start = max(0, end - block)
            lines = (os.pread(fd, end - start, start) + cut).split(b"\n")
            cut = lines.pop(0) if start else b""  # the first may be the end of a line
            end = start
            yield from (line for line in reversed(lines) if line)
            block = min(2 * block, _CHUNK)
        if cut:
            yield cut
    finally:
        os.close(fd)


def read_open(fd: int, *, header_only: bool = False) -> bytes:
    """What :func:`read_file` reads, from a file :func:`open_file` opened."""
    if not header_only:
        return read_rest(fd)
    head = bytearray()
    while len(head) <= MAX_HEADER_BYTES and (chunk := os.read(fd, _HEAD_CHUNK)):
        start = max(0, len(head) - 4)
        head += chunk
        if head.find(b"\n---\n", max(start, 3)) >= 0:
            break
    return bytes(head)


def read_lines(path: str) -> set[str]:
    """The words of a one-id-a-line file (seen sets, session records); empty if absent."""
    try:
        return set(read_file(path).decode("utf-8", "replace").split())
    except FileNotFoundError:
        return set()


def write_new(path: str, data: bytes, *, sync: bool) -> None:
    """Create ``path`` (it must not exist) holding ``data``, synced if asked (its
    data, with ``fdatasync``: the caller syncs the folder that makes it reachable).

    A file this call created but could not fill is removed again. ``OSError`` is left
    to the caller, who knows what was being done.
    """
    fd = open_file(path, CREATE)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if sync:
                _datasync(fd)
        finally:
            os.close(fd)
    except BaseException:
        remove(path)  # O_EXCL made it ours
        raise


_datasync = getattr(os, "fdatasync", os.fsync)
"""Syncs a new file's data and what reading it needs (its size, its blocks), not its
times: enough for a file that a synced folder then makes reachable (a
send's fsync of the message file was a third of its time). macOS has no
``fdatasync``; there it is ``fsync``."""


def append(path: str, data: bytes, *, sync: bool) -> int:
    """Add ``data`` to the end of ``path`` (created if absent) in one write; return the
    file's size after it. ``sync``: durable once this returns."""
    try:
        fd = open_file(path, APPEND)
    except OSError as exc:
        raise store_error(exc, f"cannot write {path}") from None
    try:
        os.write(fd, data)
        size = os.fstat(fd).st_size
        if sync:
            os.fsync(fd)
            if size == len(data):  # this write made the file: its folder entry too
                fsync_dir(os.path.dirname(path))
        return size
    except OSError as exc:
        raise store_error(exc, f"cannot write {path}") from None
    finally:
        os.close(fd)


def file_names(folder: str) -> list[str]:
    """Names of the regular files in ``folder`` (no links, folders or FIFOs); [] if none."""
    try:
        with os.scandir(folder) as it:
            return [e.name for e in it if e.is_file(follow_symlinks=False)]
    except (FileNotFoundError, NotADirectoryError):
        return []


_LISTED: set[str] = set()
"""Folders this process has listed. From its second listing of a folder on, the names
found to be ids are remembered (:func:`~mailslot.core.ids.ids_of_files`): a long-lived
reader lists the same names again and again, a one-shot command (a hook, the CLI)
lists a folder once and would only pay for remembering."""


def ids_in(folder: str) -> list[str]:
    """The message ids of the ``<id>.md`` files in ``folder``, stray files skipped."""
    again = folder in _LISTED
    if not again and len(_LISTED) < 4096:
        _LISTED.add(folder)
    return ids_of_files(file_names(folder), remember=again)


class Folders:
    """Folders under ``root``, each part checked to be a real folder, never a link.

    The root itself may be a link (where a person keeps the mailbox is their choice);
    everything inside it is checked. What was checked is remembered for
    :data:`RECHECK_SECONDS`, which keeps a send's repeated look-ups cheap, and is checked
    again after that: a watcher or waiter living for a day must not trust a check from
    the morning (a folder swapped for a link since is refused within a second).
    """

    def __init__(self, root: str) -> None:
        self.root = root
        self._checked: set[str] = set()
        self._known: dict[tuple[str, ...], str] = {}
        self._fresh_until = 0.0

    def _folder(self, *parts: str, create: bool = False) -> str:
        """``root/part/...``; without ``create`` a missing part is returned as is."""
        now = time.monotonic()
        if now >= self._fresh_until:
            self._checked.clear()
            self._known.clear()
            self._fresh_until = now + RECHECK_SECONDS
        known = self._known.get(parts)
        if known is not None:
            return known
        path = self.root
        if path not in self._checked:
            if create:
                _make_folder(path, parents=True)
            try:
                info = os.stat(path)  # the root itself may be a link
            except FileNotFoundError:
                # No mailbox yet: nothing below it exists either (as for a missing part).
                return os.path.join(path, parts[0]) if parts else path
            if not stat.S_ISDIR(info.st_mode):
                raise StoreError(f"the mailbox {path} is not a folder (check --dir or "
                                 "MAILSLOT_DIR)")
            refuse_unsafe_owner(path, info)
            self._checked.add(path)
        for part in parts:
            path = os.path.join(path, part)
            if path in self._checked:
                continue
            try:
                info = os.lstat(path)
            except FileNotFoundError:
                if not create:
                    return path  # nothing below a missing folder exists either
                _make_folder(path, parents=False)
                info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                raise not_followed(path)
            if not stat.S_ISDIR(info.st_mode):
                raise UnsafePath(f"{path} should be a folder")
            refuse_unsafe_owner(path, info)
            self._checked.add(path)
        self._known[parts] = path
        return path

    def _forget_folders(self) -> None:
        """Check every folder again at its next use (one was moved away)."""
        self._fresh_until = 0.0


def refuse_unsafe_owner(path: str, info: os.stat_result) -> None:
    """Raise :class:`UnsafePath` for a folder :func:`unsafe_owner` finds unsafe."""
    why = unsafe_owner(path, info)
    if why is not None:
        raise UnsafePath(why)


def _make_folder(path: str, *, parents: bool) -> None:
    """A new ``0700`` folder (one another process made first is fine)."""
    try:
        if parents:
            make_folders(path)
        else:
            os.mkdir(path, DIR_MODE)
    except FileExistsError:
        if parents:  # makedirs says so only when it is not a folder
            raise StoreError(f"cannot create {path}: a file is in the way") from None
    except OSError as exc:
        raise store_error(exc, f"cannot create {path}") from None


class FileLock:
    """``flock`` on a lock file, waited for on entry, released on exit or by the kernel
    when the holder dies. Each entry opens the file again, so two threads of a process
    exclude each other too. A class rather than ``contextlib.contextmanager``: the file
    store is on the hook path, where importing :mod:`contextlib` costs."""

    __slots__ = ("_fd", "_path", "_what")

    def __init__(self, path: str, what: str) -> None:
        self._path, self._what, self._fd = path, what, -1

    def __enter__(self) -> bool:
        try:
            self._fd = open_file(self._path, LOCK)
            fcntl.flock(self._fd, fcntl.LOCK_EX)
        except OSError as exc:
            if self._fd >= 0:
                os.close(self._fd)
            raise store_error(exc, f"cannot lock {self._what}") from None
        return True  # waited for: always held

    def __exit__(self, *exc: object) -> None:
        os.close(self._fd)
