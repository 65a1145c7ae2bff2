"""The file store's queues (namespaces ``wake`` and ``wake.claimed``): one small JSON
file per entry, moved by rename (what a queue does with them is
:mod:`mailslot.wake.claims`')::

    wake/pending/<agent>/<id>          queued: {"id", "agent", "attempt", "not_before"}
    wake/claimed/<agent>/<id>.<pid>    taken by the watcher with that pid
    wake/locks/<agent>                 flock()ed while a watcher claims and wakes
    wake/notify-N/...                  notifier queue N, the same three folders

An entry is created like a message (staged in ``tmp/``, synced, linked without
overwriting), so a message gets at most one entry per queue and recipient. Taking one is
one ``rename``: of two watchers, exactly one gets it. The per-agent lock is released by
the kernel when its holder dies. On the hook path: ``os`` and ``fcntl`` only.
"""

from __future__ import annotations

import fcntl
import os

from ...core import jsontext
from ...core.durable import fsync_dir, not_followed, open_file, remove
from ...core.ids import is_id
from ...store.namespaces import QUEUES, is_agent
from .fs import LOCK, file_names, read_file, store_error

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from ...store.namespaces import Key
    from ...store.records import WakeEntry
    from .layout import MailboxFiles


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


def _folder(store: MailboxFiles, queue: str, kind: str, agent: str | None = None, *,
            create: bool = True) -> str:
    """A queue's ``pending``, ``claimed`` or ``locks`` folder (of ``agent``)."""
    parts = ("wake",) if queue == "wake" else ("wake", queue)
    return store._folder(*parts, kind, *(() if agent is None else (agent,)), create=create)


def make_folders(store: MailboxFiles) -> None:
    """Every queue's folders, made before a watch of them: a folder made under a
    recursive watch together with the one inside it is reported twice by watchdog."""
    for queue in QUEUES:
        for kind in ("pending", "claimed", "locks"):
            _folder(store, queue, kind)


class Entries:
    """Queued (``pending``) or claimed entries of every queue, keyed by queue, agent
    and id (a claim: and the claim, its file's name ``<id>.<pid>``)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def _named(self, name: str) -> tuple[str, ...] | None:
        """The key's last parts a file's name gives (``None``: not an entry's)."""
        if self.kind == "pending":
            return (name,) if is_id(name) else None
        message_id, _, pid = name.rpartition(".")
        return (message_id, name) if is_id(message_id) and pid.isdigit() else None

    def _path(self, store: MailboxFiles, key: Key, *, create: bool = True) -> str:
        return os.path.join(_folder(store, key[0], self.kind, key[1], create=create),
                            key[-1])

    def walk(self, store: MailboxFiles, prefix: Key) -> Iterator[tuple[Key, str]]:
        """Every entry under ``prefix`` with its file, sorted."""
        for queue in prefix[:1] or QUEUES:
            for agent, folder in self._agents(store, queue, prefix[1:2]):
                for name in sorted(file_names(folder)):
                    named = self._named(name)
                    if named is not None and named[:max(len(prefix) - 2, 0)] == prefix[2:]:
                        yield (queue, agent, *named), os.path.join(folder, name)

    def _agents(self, store: MailboxFiles, queue: str, agent: Key
                ) -> list[tuple[str, str]]:
        """The agents of one queue with their folders (``agent``: that one only)."""
        if agent:
            return [(agent[0], _folder(store, queue, self.kind, agent[0], create=False))]
        base = _folder(store, queue, self.kind, create=False)
        try:
            with os.scandir(base) as it:
                return sorted((e.name, e.path) for e in it
                              if e.is_dir(follow_symlinks=False) and is_agent(e.name))
        except (FileNotFoundError, NotADirectoryError):
            return []

    def keys(self, store: MailboxFiles, prefix: Key) -> list[Key]:
        return [key for key, _ in self.walk(store, prefix)]

    def items(self, store: MailboxFiles, prefix: Key) -> dict[Key, WakeEntry]:
        found = {}
        for key, path in self.walk(store, prefix):
            try:
                found[key] = self._read(path, key)
            except FileNotFoundError:
                continue  # claimed (or released) while we listed
        return found

    def get(self, store: MailboxFiles, key: Key) -> WakeEntry | None:
        try:
            return self._read(self._path(store, key, create=False), key)
        except FileNotFoundError:
            return None

    def _read(self, path: str, key: Key) -> WakeEntry:
        claim = key[3] if len(key) > 3 else None
        return _decode(read_file(path), key[2], key[1], claim)

    def add(self, store: MailboxFiles, key: Key, entry: WakeEntry) -> bool:
        """Stage the entry and link it into ``pending/`` (never overwriting)."""
        _folder(store, key[0], "claimed", key[1])  # first: a watcher sees claims as moves
        folder = _folder(store, key[0], self.kind, key[1])
        tmp = store._stage(_encode(entry), f"wake-{key[1]}")
        try:
            os.link(tmp, os.path.join(folder, key[2]))
        except FileExistsError:
            return False
        finally:
            remove(tmp)
        fsync_dir(folder)
        return True

    def delete(self, store: MailboxFiles, key: Key) -> bool:
        path = self._path(store, key)
        gone = remove(path)
        fsync_dir(os.path.dirname(path))
        return gone

    def take(self, store: MailboxFiles, key: Key) -> tuple[Key, WakeEntry] | None:
        """Rename a queued entry to ``claimed/<agent>/<id>.<pid>``: of two takers
        exactly one finds it."""
        source = self._path(store, key)
        claim = f"{key[2]}.{os.getpid()}"
        target = os.path.join(_folder(store, key[0], "claimed", key[1]), claim)
        if os.path.islink(source):
            raise not_followed(source)
        try:
            os.rename(source, target)
        except FileNotFoundError:
            return None
        claimed = (*key, claim)
        return claimed, self._read(target, claimed)


PENDING, CLAIMED = Entries("pending"), Entries("claimed")


def queue_lock(store: MailboxFiles, key: Key) -> AgentLock:
    """``wake/locks/<agent>`` (or a notifier queue's), ``flock``ed without waiting."""
    return AgentLock(os.path.join(_folder(store, key[0], "locks"), key[1]), key[1])


class AgentLock:
    """A queue's lock of one agent: ``flock`` taken on entry (``True``, or ``False``
    when another holder has it), released on exit or by the kernel when the holder
    dies. A class rather than ``contextlib.contextmanager``: the file store is on the
    hook path, where importing :mod:`contextlib` costs more than the rest of a lookup."""

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
