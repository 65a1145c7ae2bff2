"""The file store as session delivery (hooks) reads and records it.

The same folders as :class:`~mailslot.store.files.FileStore`, read and written through
the same code (:mod:`.layout` for what both do, :mod:`.fs` for how a file is touched),
plus what only hooks keep::

    sessions/<agent>/<session>   ids a session has been shown, one a line
    claims/<agent>               the git checkout that first read as <agent>
    waiters/<agent>/<session>    pid of the session's one Claude Code waiter
    latest/<agent>/<host>        the id of the agent's latest session in that host

It exists apart from ``FileStore`` because a hook must start in a few milliseconds:
this module loads no ``pathlib``, ``typing``, ``dataclasses`` or YAML (see
docs/hooks.md, "Speed"). It never writes a message and never moves one.
"""

from __future__ import annotations

import os
import re
import time

from ..errors import NotFound, StoreError, UnsafePath
from ..message import STATES, from_bytes
from .fs import append, file_names, read_file, read_lines, remove, write_new
from .layout import MailboxFiles

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..message import Message, State

SESSION_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class DeliveryFiles(MailboxFiles):
    """The mailbox folder at ``root``, for the session-delivery rules.

    Listing, seen sets, events and the config come from
    :class:`~mailslot.store.layout.MailboxFiles`, as for the file store.
    """

    def __init__(self, root: str) -> None:
        super().__init__(os.path.abspath(root))

    def exists(self) -> bool:
        """Is there a mailbox at all? (A hook without one stays silent.)"""
        return os.path.isdir(self.root)

    # Mail ----------------------------------------------------------------------------
    def load(self, agent: str, message_id: str) -> tuple[Message, State]:
        """The whole message and where it is now (another process may have moved it)."""
        for state in STATES:
            path = os.path.join(self._box(agent, state), f"{message_id}.md")
            try:
                return self._parse(read_file(path), message_id, path), state
            except FileNotFoundError:
                continue
        raise NotFound(f"no message {message_id} for {agent}")

    def load_broadcast(self, message_id: str) -> Message:
        """A standing broadcast; ``NotFound`` once retracted."""
        path = os.path.join(self._folder("broadcast", "live"), f"{message_id}.md")
        try:
            return self._parse(read_file(path), message_id, path)
        except FileNotFoundError:
            raise NotFound(f"no standing broadcast {message_id}") from None

    @staticmethod
    def _parse(data: bytes, message_id: str, path: str) -> Message:
        message = from_bytes(data, name=path)
        if message.id != message_id:
            raise StoreError(f"{path}: its header names another id")
        return message

    # Sessions ------------------------------------------------------------------------
    def _session(self, agent: str, session: str, *, create: bool = False) -> str:
        if not SESSION_KEY.fullmatch(session):
            raise UnsafePath(f"session key {session!r} is not safe as a file name")
        return os.path.join(self._folder("sessions", agent, create=create), session)

    def shown(self, agent: str, session: str) -> set[str]:
        """Ids this session of ``agent`` has been shown."""
        return read_lines(self._session(agent, session))

    def shown_at(self, agent: str, session: str) -> float | None:
        """When this session was last shown (or told of) anything; ``None``: never."""
        try:
            return os.lstat(self._session(agent, session)).st_mtime
        except FileNotFoundError:
            return None

    def add_shown(self, agent: str, session: str, message_ids: Sequence[str]) -> None:
        """Record what a session was shown (not synced: losing it only shows mail again)."""
        if message_ids:
            data = "".join(f"{i}\n" for i in message_ids).encode()
            append(self._session(agent, session, create=True), data, sync=False)

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
            remove(path)  # gone already: another hook pruned it first

    # The agent's latest session per host (for wakes that name "latest") ----------------
    def set_latest_session(self, agent: str, host: str, session: str) -> None:
        """Record ``session`` (a host's own id) as ``agent``'s latest in ``host``."""
        if not (SESSION_KEY.fullmatch(session) and SESSION_KEY.fullmatch(host)):
            raise UnsafePath(f"session {session!r} of {host!r} is not safe to record")
        staged = self._stage(session.encode(), f"latest-{agent}", sync=False)
        os.replace(staged, os.path.join(self._folder("latest", agent, create=True), host))

    def latest_session(self, agent: str, host: str) -> str | None:
        """The id :meth:`set_latest_session` last recorded, if any."""
        if not SESSION_KEY.fullmatch(host):
            raise UnsafePath(f"host {host!r} is not safe as a file name")
        try:
            value = read_file(os.path.join(self._folder("latest", agent), host)).decode()
        except (FileNotFoundError, UnicodeDecodeError):
            return None
        return value if SESSION_KEY.fullmatch(value) else None

    # Waiters (Claude Code's background rewake hook) -----------------------------------
    def arrivals_folder(self, agent: str) -> str:
        """The folder new directed mail for ``agent`` is linked into (created if absent)."""
        return self._box(agent, "unread", create=True)

    def waiters_folder(self, agent: str) -> str:
        """The folder holding ``agent``'s waiter records (created if absent)."""
        return self._folder("waiters", agent, create=True)

    def set_waiter(self, agent: str, session: str, pid: int) -> None:
        """Make ``pid`` the session's waiter, replacing any older one in one rename."""
        if not SESSION_KEY.fullmatch(session):
            raise UnsafePath(f"session key {session!r} is not safe as a file name")
        staged = self._stage(str(pid).encode(), f"waiter-{agent}", sync=False)
        os.replace(staged, os.path.join(self.waiters_folder(agent), session))

    def waiter(self, agent: str, session: str) -> int | None:
        """The pid of the session's current waiter, if one was recorded."""
        if not SESSION_KEY.fullmatch(session):
            raise UnsafePath(f"session key {session!r} is not safe as a file name")
        try:
            return int(read_file(os.path.join(self._folder("waiters", agent), session)))
        except (FileNotFoundError, ValueError):
            return None

    def waiter_pids(self, agent: str) -> list[int]:
        """The pids recorded by ``agent``'s waiters, one per session (some may be gone)."""
        folder = self._folder("waiters", agent)
        pids: list[int] = []
        for name in file_names(folder):
            try:
                pids.append(int(read_file(os.path.join(folder, name))))
            except (FileNotFoundError, ValueError, UnsafePath):
                continue
        return pids

    # Claims --------------------------------------------------------------------------
    def claim(self, agent: str, path: str) -> str:
        """The checkout that claimed ``agent`` first; ``path`` if nobody had yet."""
        claim = os.path.join(self._folder("claims", create=True), agent)
        try:
            write_new(claim, os.fsencode(path), sync=True)
            return path
        except FileExistsError:
            return os.fsdecode(read_file(claim))

    def replace_claim(self, agent: str, path: str) -> None:
        """Give ``agent``'s claim to ``path`` (the old checkout is gone)."""
        staged = self._stage(os.fsencode(path), f"claim-{agent}")
        os.replace(staged, os.path.join(self._folder("claims", create=True), agent))
