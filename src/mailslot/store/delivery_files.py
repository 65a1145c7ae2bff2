"""The file store as session delivery (hooks) reads and records it.

Same folders and the same habits as :class:`~mailslot.store.files.FileStore` (nothing
inside the root followed through a symlink, files 0600, folders 0700), plus what only
hooks keep::

    sessions/<agent>/<session>   ids a session has been shown, one a line
    claims/<agent>               the git checkout that first read as <agent>
    waiters/<agent>/<session>    pid of the session's one Claude Code waiter

It exists apart from ``FileStore`` because a hook must start in a few milliseconds:
this module loads no ``pathlib``, ``typing``, ``dataclasses`` or YAML (see
docs/hooks.md, "Speed"). It never writes a message and never moves one.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import time

from ..errors import NotFound, StoreError, UnsafePath
from ..ids import is_id
from ..message import STATES, from_bytes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from typing import Any

    from ..message import Message, State

FOLDER_OF = {"unread": "new", "read": "cur", "done": "done"}  # as in files.py
SESSION_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_DIR_MODE = 0o700
_FILE_MODE = 0o600
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_READ = os.O_RDONLY | os.O_NOFOLLOW | _CLOEXEC
_APPEND = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | _CLOEXEC
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _CLOEXEC


def _read(path: str) -> bytes:
    """A whole regular file, never through a symlink; FileNotFoundError if absent."""
    try:
        fd = os.open(path, _READ)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafePath(f"{path} is a symlink; mailslot does not follow links") from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafePath(f"{path} is not a regular file")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _write(path: str, data: bytes, flags: int, *, sync: bool) -> None:
    try:
        fd = os.open(path, flags, _FILE_MODE)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafePath(f"{path} is a symlink; mailslot does not follow links") from None
        raise
    try:
        os.write(fd, data)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def _lines(data: bytes) -> set[str]:
    return set(data.decode("utf-8", "replace").split())


class DeliveryFiles:
    """The mailbox folder at ``root``, for the session-delivery rules."""

    def __init__(self, root: str) -> None:
        self.root = os.path.abspath(root)
        self._checked: set[str] = set()

    def exists(self) -> bool:
        """Is there a mailbox at all? (A hook without one stays silent.)"""
        return os.path.isdir(self.root)

    def _folder(self, *parts: str, create: bool = False) -> str:
        """A folder under the root, each part checked to be a real folder (not a link)."""
        path = self.root
        for part in parts:
            path = os.path.join(path, part)
            if path in self._checked:
                continue
            try:
                info = os.lstat(path)
            except FileNotFoundError:
                if not create:
                    return path
                os.makedirs(path, _DIR_MODE, exist_ok=True)
                info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                raise UnsafePath(f"{path} is a symlink; mailslot does not follow links")
            if not stat.S_ISDIR(info.st_mode):
                raise UnsafePath(f"{path} should be a folder")
            self._checked.add(path)
        return path

    @staticmethod
    def _ids_in(folder: str) -> list[str]:
        try:
            with os.scandir(folder) as it:
                names = [e.name[:-3] for e in it
                         if e.name.endswith(".md") and e.is_file(follow_symlinks=False)]
        except FileNotFoundError:
            return []
        return [n for n in names if is_id(n)]

    # Mail ----------------------------------------------------------------------------
    def entries(self, agent: str, states: Iterable[State]) -> list[tuple[str, State]]:
        """The ids in ``agent``'s mailbox in those states, in no particular order."""
        return [(message_id, state) for state in states
                for message_id in self._ids_in(self._folder("agents", agent, FOLDER_OF[state]))]

    def load(self, agent: str, message_id: str) -> tuple[Message, State]:
        """The whole message and where it is now (another process may have moved it)."""
        for state in STATES:
            path = os.path.join(self._folder("agents", agent, FOLDER_OF[state]),
                                f"{message_id}.md")
            try:
                return self._parse(_read(path), message_id, path), state
            except FileNotFoundError:
                continue
        raise NotFound(f"no message {message_id} for {agent}")

    def broadcast_ids(self) -> list[str]:
        """Ids of the standing broadcasts."""
        return self._ids_in(self._folder("broadcast", "live"))

    def load_broadcast(self, message_id: str) -> Message:
        """A standing broadcast; ``NotFound`` once retracted."""
        path = os.path.join(self._folder("broadcast", "live"), f"{message_id}.md")
        try:
            return self._parse(_read(path), message_id, path)
        except FileNotFoundError:
            raise NotFound(f"no standing broadcast {message_id}") from None

    @staticmethod
    def _parse(data: bytes, message_id: str, path: str) -> Message:
        message = from_bytes(data, name=path)
        if message.id != message_id:
            raise StoreError(f"{path}: its header names another id")
        return message

    # Broadcasts served -----------------------------------------------------------------
    def seen(self, agent: str) -> set[str]:
        """Broadcast ids ``agent`` has been served (the same file ``FileStore`` keeps)."""
        try:
            return _lines(_read(os.path.join(self._folder("broadcast", "seen"), agent)))
        except FileNotFoundError:
            return set()

    def add_seen(self, agent: str, message_ids: Sequence[str]) -> None:
        """Record broadcasts as served, durably."""
        if message_ids:
            path = os.path.join(self._folder("broadcast", "seen", create=True), agent)
            _write(path, "".join(f"{i}\n" for i in message_ids).encode(), _APPEND, sync=True)

    # Sessions ------------------------------------------------------------------------
    def _session(self, agent: str, session: str, *, create: bool = False) -> str:
        if not SESSION_KEY.fullmatch(session):
            raise UnsafePath(f"session key {session!r} is not safe as a file name")
        return os.path.join(self._folder("sessions", agent, create=create), session)

    def shown(self, agent: str, session: str) -> set[str]:
        """Ids this session of ``agent`` has been shown."""
        try:
            return _lines(_read(self._session(agent, session)))
        except FileNotFoundError:
            return set()

    def add_shown(self, agent: str, session: str, message_ids: Sequence[str]) -> None:
        """Record what a session was shown (not synced: losing it only shows mail again)."""
        if message_ids:
            data = "".join(f"{i}\n" for i in message_ids).encode()
            _write(self._session(agent, session, create=True), data, _APPEND, sync=False)

    def prune_sessions(self, agent: str, older_than: float) -> None:
        """Forget sessions (and their waiter records) untouched for ``older_than`` seconds."""
        limit = time.time() - older_than
        old: list[str] = []
        for kind in ("sessions", "waiters"):
            try:
                with os.scandir(self._folder(kind, agent)) as it:
                    old += [e.path for e in it if SESSION_KEY.fullmatch(e.name)
                            and e.is_file(follow_symlinks=False)
                            and e.stat(follow_symlinks=False).st_mtime < limit]
            except FileNotFoundError:
                continue
        for path in old:
            try:
                os.unlink(path)
            except FileNotFoundError:
                continue  # another hook pruned it first

    # Waiters (Claude Code's background rewake hook) -----------------------------------
    def arrivals_folder(self, agent: str) -> str:
        """The folder new directed mail for ``agent`` is linked into (created if absent)."""
        return self._folder("agents", agent, FOLDER_OF["unread"], create=True)

    def waiters_folder(self, agent: str) -> str:
        """The folder holding ``agent``'s waiter records (created if absent)."""
        return self._folder("waiters", agent, create=True)

    def set_waiter(self, agent: str, session: str, pid: int) -> None:
        """Make ``pid`` the session's waiter, replacing any older one in one rename."""
        if not SESSION_KEY.fullmatch(session):
            raise UnsafePath(f"session key {session!r} is not safe as a file name")
        staged = os.path.join(self._folder("tmp", create=True),
                              f"waiter-{agent}.{pid}.{os.urandom(4).hex()}")
        _write(staged, str(pid).encode(), _CREATE, sync=False)
        os.replace(staged, os.path.join(self.waiters_folder(agent), session))

    def waiter(self, agent: str, session: str) -> int | None:
        """The pid of the session's current waiter, if one was recorded."""
        if not SESSION_KEY.fullmatch(session):
            raise UnsafePath(f"session key {session!r} is not safe as a file name")
        try:
            return int(_read(os.path.join(self._folder("waiters", agent), session)))
        except (FileNotFoundError, ValueError):
            return None

    def waiter_pids(self, agent: str) -> list[int]:
        """The pids recorded by ``agent``'s waiters, one per session (some may be gone)."""
        pids: list[int] = []
        try:
            with os.scandir(self._folder("waiters", agent)) as it:
                paths = [e.path for e in it if e.is_file(follow_symlinks=False)]
        except FileNotFoundError:
            return pids
        for path in paths:
            try:
                pids.append(int(_read(path)))
            except (FileNotFoundError, ValueError, UnsafePath):
                continue
        return pids

    # Claims --------------------------------------------------------------------------
    def claim(self, agent: str, path: str) -> str:
        """The checkout that claimed ``agent`` first; ``path`` if nobody had yet."""
        claim = os.path.join(self._folder("claims", create=True), agent)
        try:
            _write(claim, os.fsencode(path), _CREATE, sync=True)
            return path
        except FileExistsError:
            return os.fsdecode(_read(claim))

    def replace_claim(self, agent: str, path: str) -> None:
        """Give ``agent``'s claim to ``path`` (the old checkout is gone)."""
        staged = os.path.join(self._folder("tmp", create=True),
                              f"claim-{agent}.{os.getpid()}.{os.urandom(4).hex()}")
        _write(staged, os.fsencode(path), _CREATE, sync=True)
        os.replace(staged, os.path.join(self._folder("claims", create=True), agent))

    # Everything else -----------------------------------------------------------------
    def append_event(self, event: Mapping[str, Any]) -> None:
        """A receipt in the events log, as ``FileStore`` writes them."""
        line = json.dumps(event, ensure_ascii=False, separators=(",", ":")) + "\n"
        path = os.path.join(self._folder("log", create=True), "events.jsonl")
        _write(path, line.encode("utf-8"), _APPEND, sync=False)

    def load_config(self) -> dict[str, Any]:
        """The raw config (``{}`` when there is none)."""
        path = os.path.join(self.root, "config.json")
        try:
            config = json.loads(_read(path))
        except FileNotFoundError:
            return {}
        except ValueError:
            raise StoreError(f"{path} is not valid JSON") from None
        if not isinstance(config, dict):
            raise StoreError(f"{path} must hold a JSON object")
        return config
