"""Where things live in the mailbox folder, and what every reader of it does alike.

:class:`MailboxFiles` is the one base of every part of
:class:`~mailslot.backends.files.file_store.FileStore` (each part subclasses it directly;
the store lists the parts side by side): listing a mailbox, the one reader of message
files, the logs (the events log rolled into segments) and the staging area. Their rules
about touching files are in :mod:`.fs`; the layout is in docs/format.md. On the hook
path, so it loads nothing heavy (see docs/hooks.md, "Speed").
"""

from __future__ import annotations

import fcntl
import os
from stat import S_ISREG

from ...core import jsontext
from ...core.durable import open_file
from ...core.errors import NotFound, StoreError, UnsafePath
from ...core.message import STATES
from ...core.names import is_valid_name
from ...store.format import (
    EVENTS,
    FOLDER_OF,
    LAYOUT_NAMES,
    SEGMENT_BYTES,
    SESSIONS,
    event_segments,
    parse_message_file,
)
from . import kept_listing
from .fs import (
    LOCK,
    READ,
    Folders,
    append,
    file_names,
    ids_in,
    lines_from_end,
    read_file,
    read_open,
    store_error,
    write_new,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping
    from typing import Any

    from ...core.message import Message, State

TALLY = "tally"
"""The folder of what is kept about each agent's mail: ``tally_files`` and
``kept_listing`` say what."""
OPEN: tuple[State, ...] = ("unread", "read")
"""The states of open mail, whose folders have kept listings."""


class MailboxFiles(Folders):
    """The mailbox folder at ``root`` (an absolute path), as every reader sees it.

    The one reader of message files (:meth:`load`, :meth:`load_broadcast`) is here, so
    every path (the CLI, the MCP server, the hooks) applies the same checks: a file is
    read without following links, its header is bounded, and the id in its header must
    be its file name.
    """

    def exists(self) -> bool:
        """Is there a mailbox at all: the folder, empty (as ``init`` makes it) or holding
        any of :data:`~mailslot.store.format.LAYOUT_NAMES`? A folder of other files is
        none (a mistyped ``--dir``). A hook without one stays silent; a command that
        only reads says so."""
        try:
            names = os.listdir(self.root)
        except OSError:  # missing, not a folder, not ours to list
            return False
        return not names or not LAYOUT_NAMES.isdisjoint(names)

    def _box(self, agent: str, state: State, *, create: bool = False) -> str:
        return self._folder("agents", agent, FOLDER_OF[state], create=create)

    def _stage(self, data: bytes, name: str, *, sync: bool = True) -> str:
        """A fresh file in ``tmp/`` holding ``data``, to be linked or renamed into place."""
        folder = self._folder("tmp", create=True)
        path = os.path.join(folder, f"{name}.{os.getpid()}.{os.urandom(4).hex()}")
        write_new(path, data, sync=sync)
        return path

    # Mail ----------------------------------------------------------------------------
    def entries(self, agent: str, states: Iterable[State]) -> list[tuple[str, State]]:
        """The ids in ``agent``'s mailbox in those states, in no particular order (open
        mail from its kept listing when the folder did not change: :mod:`.kept_listing`)."""
        return [(message_id, state) for state in states
                for message_id in (self._open_listing(agent, state)[1] if state in OPEN
                                   else ids_in(self._box(agent, state)))]

    def _open_listing(self, agent: str, state: State, want: int | None = None
                     ) -> tuple[int, list[str]]:
        """How many ``state`` (unread or read) messages ``agent`` has and the ``want``
        oldest of their ids (all with ``None``), sorted; see :mod:`.kept_listing`."""
        kept = self._kept_path(agent, state) if is_valid_name(agent) else None
        return kept_listing.listing(self._box(agent, state), kept,
                                    lambda data: self._kept_stage(agent, data), want)

    def _kept_path(self, agent: str, state: State) -> str:
        """``tally/<agent>.<state>.ids`` (``UnsafePath`` for a name unsafe there)."""
        return self._tally_path(agent, f".{state}.ids")

    def _kept_stage(self, agent: str, data: bytes) -> str:
        self._folder(TALLY, create=True)
        return self._stage(data, f"listing-{agent}", sync=False)

    def _tally_path(self, agent: str, suffix: str, *, create: bool = False) -> str:
        """``tally/<agent><suffix>``: the agent's counts, lock and kept listings."""
        if not is_valid_name(agent):
            raise UnsafePath(f"agent {agent!r} is not safe as a file name")
        return os.path.join(self._folder(TALLY, create=create), agent + suffix)

    def _message_path(self, agent: str, state: State, message_id: str) -> str:
        return os.path.join(self._box(agent, state), f"{message_id}.md")

    def state_of(self, agent: str, message_id: str) -> State | None:
        """The state of ``message_id`` for ``agent``, or ``None`` if it has no copy."""
        for state in STATES:
            if os.path.lexists(self._message_path(agent, state, message_id)):
                return state
        return None

    def load(self, agent: str, message_id: str, *, header_only: bool = False,
             state: State | None = None) -> tuple[Message, State]:
        """The message and its state for ``agent``; ``NotFound``, or ``Unreadable``.
        ``state``: where a listing just saw it, looked at first (a page of 200 saves
        200 look-ups); if it has moved since, it is looked for as without."""
        # A concurrent rename can move the file between our look and our open: retry.
        for _ in range(5):
            state = state or self.state_of(agent, message_id)
            if state is None:
                break
            path = self._message_path(agent, state, message_id)
            try:
                return PARSED.load(path, message_id, header_only), state
            except FileNotFoundError:
                state = None
                continue
        raise NotFound(f"no message {message_id} for {agent}")

    def load_broadcast(self, message_id: str, *, header_only: bool = False
                       ) -> tuple[Message, bool]:
        """The broadcast and whether it still stands; ``NotFound``, or ``Unreadable``."""
        for _ in range(5):
            for live, folder in ((True, "live"), (False, "retracted")):
                path = os.path.join(self._folder("broadcast", folder), f"{message_id}.md")
                try:
                    return PARSED.load(path, message_id, header_only), live
                except FileNotFoundError:
                    continue
        raise NotFound(f"no broadcast {message_id}")

    def broadcast_ids(self, *, live: bool = True) -> list[str]:
        """Ids of standing (``live``) or retracted broadcasts."""
        return ids_in(self._folder("broadcast", "live" if live else "retracted"))

    # The logs (one JSON object a line, appended in one O_APPEND write) -------------------
    def append_log(self, log: str, record: Mapping[str, Any], *,
                   durable: bool = False) -> None:
        """A line, synced only if ``durable`` (a send's receipt is not: the folders it
        synced are the truth); the events log rolls to a numbered segment past
        :data:`~mailslot.store.format.SEGMENT_BYTES`."""
        name = _current(log)
        line = jsontext.dumps(record, ascii=False, compact=True) + "\n"
        folder = self._folder("log", create=True)
        if append(os.path.join(folder, name), line.encode("utf-8"),
                  sync=durable) > SEGMENT_BYTES and name == EVENTS:
            self._roll_events(folder)

    def read_log(self, log: str, *, newest_first: bool = False
                 ) -> Iterator[dict[str, Any]]:
        name = _current(log)
        folder = self._folder("log")
        segments = event_segments(file_names(folder)) if name == EVENTS else [name]
        for segment in reversed(segments) if newest_first else segments:
            path = os.path.join(folder, segment)
            try:  # newest first: from the end, so a reader stopping early reads little
                lines = lines_from_end(path) if newest_first else \
                    read_file(path).splitlines()
            except FileNotFoundError:
                continue  # rolled meanwhile: its lines are in the next numbered segment
            except OSError as exc:
                raise store_error(exc, f"cannot read the {log} log") from None
            for line in lines:
                try:
                    record = jsontext.loads(line.decode("utf-8", "replace"))
                except ValueError:
                    continue  # a line cut by a crash; the folders still hold the truth
                if isinstance(record, dict):
                    yield record

    def _roll_events(self, folder: str) -> None:
        """Rename the current segment to the next number, once, whoever else tries too.

        A line another process appends meanwhile lands in the renamed segment (it holds
        the same file open): nothing is lost.
        """
        lock = open_file(os.path.join(folder, "roll.lock"), LOCK)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            current = os.path.join(folder, EVENTS)
            try:
                if os.lstat(current).st_size <= SEGMENT_BYTES:
                    return  # another process rolled it first
            except FileNotFoundError:
                return
            rolled = event_segments(file_names(folder))[:-1]
            number = int(rolled[-1][7:-6]) + 1 if rolled else 1
            os.rename(current, os.path.join(folder, f"events.{number:06d}.jsonl"))
        finally:
            os.close(lock)


LOGS = {"events": EVENTS, "sessions": SESSIONS}
"""Each log's current file in ``log/``."""


def _current(log: str) -> str:
    name = LOGS.get(log)
    if name is None:
        raise StoreError(f"no log {log!r} in a mailslot store")
    return name


def _key(path: str, header_only: bool, info: os.stat_result) -> tuple[object, ...]:
    return (path, header_only, info.st_dev, info.st_ino, info.st_mtime_ns, info.st_ctime_ns,
            info.st_size)


class ParsedFiles:
    """Message files already parsed, so a long-running reader (the MCP server, the web
    overview) does not parse the same 200 files again on every read.

    A known file is not even opened (a 200-message page was 800 system calls):
    the parse is reused when the path's own ``lstat`` (a regular file, never a link
    followed) shows the inode, mtime, ctime and size that were parsed; a chmod, a
    rename or a new link changes the ctime, so anything else is opened safely (as
    :func:`~.fs.open_file` does) and read again. mailslot never rewrites a message
    file in place (it writes a new file and links or renames it), and an editor that
    does changes the mtime or the size (only a same-size rewrite within one tick of the
    file system's clock could go unseen, and only by a process that read the file in
    that tick). A move between state folders changes the path, so it is parsed again.
    Bounded by :data:`MAX_BYTES` of file and :data:`MAX_FILES`, oldest out first.
    """

    MAX_FILES = 2048
    MAX_BYTES = 8 << 20  # of files; parsed, they take two to three times that

    def __init__(self) -> None:
        self._parsed: dict[tuple[object, ...], tuple[Message, int]] = {}
        self._bytes = 0

    def load(self, path: str, message_id: str, header_only: bool) -> Message:
        """The message in ``path`` (named ``message_id``); ``Unreadable``, or the
        ``OSError`` of opening it."""
        try:
            seen = os.lstat(path)
        except OSError:
            seen = None  # opening it says why, as without the cache
        if seen is not None and S_ISREG(seen.st_mode):  # never a link: not followed
            known = self._parsed.get(_key(path, header_only, seen))
            if known is not None:
                return known[0]
        fd = open_file(path, READ)
        try:
            info = os.fstat(fd)
            key = _key(path, header_only, info)
            known = self._parsed.get(key)
            if known is not None:
                return known[0]
            message = parse_message_file(read_open(fd, header_only=header_only), message_id, path,
                             header_only)
        finally:
            os.close(fd)
        self._keep(key, message, info.st_size)
        return message

    def _keep(self, key: tuple[object, ...], message: Message, size: int) -> None:
        # Lock-free (``threading`` stays off the CLI's imports): the MCP server's worker
        # threads may race here, and the worst a race does is forget an entry early.
        if size > self.MAX_BYTES // 16 or key in self._parsed:
            return  # a huge file would push out a page's worth of small ones
        self._parsed[key] = (message, size)
        self._bytes += size
        while len(self._parsed) > self.MAX_FILES or self._bytes > self.MAX_BYTES:
            try:
                oldest = next(iter(self._parsed))  # dicts keep insertion order
                self._bytes -= self._parsed.pop(oldest)[1]
            except (StopIteration, KeyError, RuntimeError):
                break  # another thread changed it meanwhile: trim on the next call


PARSED = ParsedFiles()
"""The process's one cache of parsed message files (see :class:`ParsedFiles`)."""
