"""The file store's wake queue: one small JSON file per wake, moved by rename.

Layout (under the mailbox root)::

    wake/pending/<agent>/<id>          queued: {"id", "agent", "attempt", "not_before"}
    wake/claimed/<agent>/<id>.<pid>    taken by the watcher with that pid
    wake/locks/<agent>                 flock()ed while a watcher claims and wakes

A wake is created like a message (staged in ``tmp/``, synced, linked without
overwriting), so a message gets at most one queued wake per recipient. Claiming is one
``rename``: of two watchers, exactly one gets it. A retry is linked into ``pending/``
*before* its claim is removed, so a crash in between leaves the wake twice, never lost.
The per-agent lock is released by the kernel when its holder dies; whoever next holds it
and finds a claim knows the claim's watcher stopped mid-wake and queues it again.
"""

from __future__ import annotations

import fcntl
import os

from ...core import jsontext
from ...core.durable import fsync_dir, not_followed, open_file, remove
from ...core.errors import UnsafePath
from ...core.ids import is_id
from ...core.names import is_valid_name
from .fs import LOCK, file_names, read_file, store_error
from .layout import MailboxFiles

TYPE_CHECKING = False  # the file store is on the hook path: no typing, no dataclasses
if TYPE_CHECKING:
    from typing import Any

    from ...store.records import WakeEntry


def _encode(entry: WakeEntry) -> bytes:
    from ...core.dates import UTC, datetime

    due = datetime.fromtimestamp(entry.not_before, UTC).isoformat()
    record = {"id": entry.message_id, "agent": entry.agent, "attempt": entry.attempt,
              "not_before": entry.not_before, "due": due}
    return (jsontext.dumps(record) + "\n").encode("utf-8")


def _decode(data: bytes, message_id: str, agent: str, claim: str | None) -> WakeEntry:
    """The entry a file holds; a damaged file still names a wake, so it is kept as new."""
    from ...store.records import WakeEntry

    try:
        record: Any = jsontext.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        record = {}
    if not isinstance(record, dict):
        record = {}
    attempt = record.get("attempt")
    not_before = record.get("not_before")
    return WakeEntry(
        message_id,
        agent,
        attempt if isinstance(attempt, int) and not isinstance(attempt, bool) else 1,
        float(not_before) if isinstance(not_before, int | float) else 0.0,
        claim,
    )


class FileWakeQueue(MailboxFiles):
    """The ``wake_*`` methods of :class:`~.file_store.FileStore` (a base class of it)."""

    _queue: tuple[str, ...] = ("wake",)  # a notifier lane is ("wake", "notify-N")

    def _wake_dir(self, kind: str, agent: str, *, create: bool = True) -> str:
        if not is_valid_name(agent) or agent != agent.lower():
            raise UnsafePath(f"{agent!r} is not an agent name; not used as a folder")
        return self._folder(*self._queue, kind, agent, create=create)

    def _read_entry(self, path: str, message_id: str, agent: str, claim: str | None
                    ) -> WakeEntry:
        return _decode(read_file(path), message_id, agent, claim)

    def _link_entry(self, entry: WakeEntry) -> bool:
        """Stage the entry and link it into pending/ (never overwriting); False if present."""
        if not is_id(entry.message_id):
            raise UnsafePath(f"{entry.message_id!r} is not a message id; not used as a name")
        self._wake_dir("claimed", entry.agent)  # first, so a watcher sees claims as moves
        folder = self._wake_dir("pending", entry.agent)
        tmp = self._stage(_encode(entry), f"wake-{entry.agent}")
        try:
            os.link(tmp, os.path.join(folder, entry.message_id))
        except FileExistsError:
            return False
        finally:
            remove(tmp)
        fsync_dir(folder)
        return True

    def wake_enqueue(self, entry: WakeEntry) -> bool:
        return self._link_entry(entry)

    def wake_agents(self) -> list[str]:
        found: set[str] = set()
        for kind in ("pending", "claimed"):
            folder = self._folder(*self._queue, kind)
            try:
                with os.scandir(folder) as it:
                    agents = [e.name for e in it if e.is_dir(follow_symlinks=False)]
            except FileNotFoundError:
                continue
            found.update(a for a in agents
                         if is_valid_name(a) and file_names(os.path.join(folder, a)))
        return sorted(found)

    def wake_pending(self, agent: str) -> list[WakeEntry]:
        folder = self._wake_dir("pending", agent, create=False)
        entries: list[WakeEntry] = []
        for name in file_names(folder):
            if not is_id(name):
                continue
            path = os.path.join(folder, name)
            try:
                entries.append(self._read_entry(path, name, agent, None))
            except FileNotFoundError:
                continue  # claimed while we listed
        return entries

    def wake_claim(self, entry: WakeEntry) -> WakeEntry | None:
        source = os.path.join(self._wake_dir("pending", entry.agent), entry.message_id)
        claim = f"{entry.message_id}.{os.getpid()}"
        target = os.path.join(self._wake_dir("claimed", entry.agent), claim)
        if os.path.islink(source):
            raise not_followed(source)
        try:
            os.rename(source, target)
        except FileNotFoundError:
            return None
        return self._read_entry(target, entry.message_id, entry.agent, claim)

    def wake_release(self, claimed: WakeEntry, retry: WakeEntry | None = None) -> None:
        if claimed.claim is None:
            raise ValueError("wake_release needs a claimed entry")
        if retry is not None:
            self._link_entry(retry)  # already there (a crash between link and unlink): fine
        folder = self._wake_dir("claimed", claimed.agent)
        remove(os.path.join(folder, claimed.claim))
        fsync_dir(folder)

    def wake_orphans(self, agent: str) -> list[WakeEntry]:
        folder = self._wake_dir("claimed", agent, create=False)
        orphans: list[WakeEntry] = []
        for name in file_names(folder):
            message_id, _, pid = name.rpartition(".")
            if not is_id(message_id) or not pid.isdigit():
                continue
            path = os.path.join(folder, name)
            try:
                orphans.append(self._read_entry(path, message_id, agent, name))
            except FileNotFoundError:
                continue  # released meanwhile
        return orphans

    def wake_lock(self, agent: str) -> AgentLock:
        if not is_valid_name(agent) or agent != agent.lower():
            raise UnsafePath(f"{agent!r} is not an agent name; not used as a file name")
        return AgentLock(os.path.join(self._folder(*self._queue, "locks", create=True), agent),
                         agent)


class AgentLock:
    """``wake_lock``'s context: ``flock`` taken on entry (``True``, or ``False`` when
    another holder has it), released on exit or by the kernel when the holder dies.

    A class rather than ``contextlib.contextmanager``: the file store is on the hook
    path, where importing :mod:`contextlib` costs more than the rest of a lookup.
    """

    __slots__ = ("_agent", "_fd", "_path")

    def __init__(self, path: str, agent: str) -> None:
        self._path, self._agent, self._fd = path, agent, -1

    def __enter__(self) -> bool:
        try:
            self._fd = open_file(self._path, LOCK)
        except OSError as exc:
            raise store_error(exc, f"cannot lock {self._agent}'s wakes") from None
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def __exit__(self, *exc: object) -> None:
        os.close(self._fd)
