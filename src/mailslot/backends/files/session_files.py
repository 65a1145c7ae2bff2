"""The file store's per-session delivery state (what the session hooks keep)::

    sessions/<agent>/<session>   ids a session has been shown, one a line
    claims/<agent>               the git checkout that first read as <agent>
    waiters/<agent>/<session>    pid of the session's one background waiter
    latest/<agent>/<host>        the id of the agent's latest session in that host
    hook-sessions/<agent>/<session>  a host session the hooks ran in: its
                                 facts as JSON, and as its time the last hook call
    instances/<agent>/<id>       mail for one session of <agent> (name@session): the
                                 session's id (an index; the message's header rules)

A part of :class:`~.file_store.FileStore` (a base class of it), kept in its own
module because each part of the store has one idea. On the hook path, like all of the
file store: it loads no ``pathlib``, ``typing``, ``dataclasses`` or YAML (see
docs/hooks.md, "Speed").
"""

from __future__ import annotations

import os
import time

from ...core import jsontext
from ...core.durable import remove
from ...core.errors import UnsafePath
from ...core.ids import is_id
from ...core.names import SESSION_KEY
from .fs import append, file_names, read_file, read_lines, store_error, write_new
from .layout import MailboxFiles

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any



class SessionFiles(MailboxFiles):
    """The per-session delivery state of :class:`~.file_store.FileStore`."""

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
        for kind in ("sessions", "waiters", "hook-sessions", "instances"):
            try:
                with os.scandir(self._folder(kind, agent)) as it:
                    old += [e.path for e in it if (SESSION_KEY.fullmatch(e.name)
                                                   or kind == "instances")
                            and e.is_file(follow_symlinks=False)
                            and e.stat(follow_symlinks=False).st_mtime < limit]
            except FileNotFoundError:
                continue
        for path in old:
            remove(path)  # gone already: another hook pruned it first

    # Hook sessions (every host session the hooks ran in is a session) ---------
    def refresh_hook_session(self, agent: str, session: str) -> bool:
        path = self._session_of("hook-sessions", agent, session)
        try:
            os.utime(path)
            return True
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise store_error(exc, f"cannot record {agent}'s session {session}") from None

    def record_hook_session(self, agent: str, session: str, facts: Mapping[str, Any]
                            ) -> None:
        self._session_of("hook-sessions", agent, session)  # refuses an unsafe key first
        data = jsontext.dumps(dict(facts), ascii=False).encode("utf-8")
        try:
            staged = self._stage(data, f"hook-{agent}", sync=False)
            os.replace(staged, self._session_of("hook-sessions", agent, session,
                                                create=True))
        except OSError as exc:
            raise store_error(exc, f"cannot record {agent}'s session {session}") from None

    def add_instance_mail(self, agent: str, message_id: str, session: str) -> None:
        if not (is_id(message_id) and SESSION_KEY.fullmatch(session)):
            raise UnsafePath(f"mail {message_id!r} for {session!r} is not safe to record")
        path = os.path.join(self._folder("instances", agent, create=True), message_id)
        try:
            write_new(path, session.encode(), sync=True)
        except FileExistsError:
            return
        except OSError as exc:
            raise store_error(exc, f"cannot record {agent}'s mail {message_id}") from None

    def instance_mail(self, agent: str) -> dict[str, str]:
        folder = self._folder("instances", agent)
        found: dict[str, str] = {}
        for name in file_names(folder):
            if not is_id(name):
                continue
            try:
                found[name] = read_file(os.path.join(folder, name)).decode("utf-8", "replace")
            except (OSError, UnsafePath):
                continue
        return found

    def hook_sessions(self) -> list[dict[str, Any]]:
        """Every readable hook session: its facts, ``agent``, ``session`` and ``seen``
        (when a hook last ran in it, seconds since the epoch)."""
        folder = self._folder("hook-sessions")
        found: list[dict[str, Any]] = []
        try:
            with os.scandir(folder) as it:
                agents = sorted(e.name for e in it if e.is_dir(follow_symlinks=False))
        except FileNotFoundError:
            return found
        for agent in agents:
            for name in sorted(file_names(os.path.join(folder, agent))):
                if not SESSION_KEY.fullmatch(name):
                    continue
                path = os.path.join(folder, agent, name)
                try:
                    seen = os.lstat(path).st_mtime
                    record = jsontext.loads(read_file(path))
                except (OSError, ValueError, UnsafePath):
                    continue  # vanished, or not ours
                if isinstance(record, dict):
                    found.append({**record, "agent": agent, "session": name, "seen": seen})
        return found

    def _session_of(self, kind: str, agent: str, session: str, *,
                    create: bool = False) -> str:
        if not SESSION_KEY.fullmatch(session):
            raise UnsafePath(f"session key {session!r} is not safe as a file name")
        return os.path.join(self._folder(kind, agent, create=create), session)

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

    # Waiters (a host's background rewake hook) ----------------------------------------
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
