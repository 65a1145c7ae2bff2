"""A host's registry of live sessions, as its door and a bridge read it: one
``<pid>.json`` record per process, in a folder of the host's (a host whose sessions
message each other keeps one; see the host's page of docs/).

Every hook of a host with a bridge asks whether a bridge runs, and a hook loads nothing
of waking: :meth:`Host.bridged <mailslot.host_registry.host.Host.bridged>` makes a raw
look for the bridge's mark first and asks the bridge (which loads this module) only when
a record carries it. What makes a record trusted (its owner, its pid's start time, its
protocol) stays with each host's door: the functions here take that check as ``read``.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    Read = Callable[[str, int], dict[str, Any]]
    """A host's check of ``<pid>.json`` in a folder: the record, or ``DoorError``."""

class Peer:
    """A live session as its own checked record names it."""

    __slots__ = ("name", "pid", "session", "socket")

    def __init__(self, pid: int, session: str, socket: str | None, name: str = "") -> None:
        self.pid = pid
        self.session = session
        self.socket = socket  # where receipts to it go
        self.name = name


def peer(record: Mapping[str, Any], socket_key: str) -> Peer:
    """The session a checked record names; its socket under ``socket_key``."""
    sock, name = record.get(socket_key), record.get("name")
    return Peer(int(record["pid"]), str(record["sessionId"]),
                sock if isinstance(sock, str) and sock else None,
                name if isinstance(name, str) else "")


def pid_of_record(name: str) -> int | None:
    """The pid a registry file's name gives (``<pid>.json``), if it is one's."""
    pid = name[:-5] if name.endswith(".json") else ""
    return int(pid) if pid.isdigit() and pid[0] != "0" else None


def record_names(folder: str) -> list[str]:
    """The ``<pid>.json`` names in ``folder``, sorted; ``DoorError`` when it cannot be
    listed."""
    from .line_socket import DoorError

    try:
        return sorted(n for n in os.listdir(folder) if pid_of_record(n) is not None)
    except OSError as exc:
        raise DoorError(f"{folder}: {exc.strerror}") from None


def own_record(folder: str, pid: int, *, private: bool) -> tuple[str, dict[str, Any]]:
    """The path and object of ``<pid>.json`` in ``folder``: this user's own file
    (:func:`~mailslot.wake.line_socket.own_file`), JSON, naming ``pid``; else
    ``DoorError``. The host's own checks follow."""
    from ..core import jsontext
    from .line_socket import DoorError, own_file

    path = os.path.join(folder, f"{pid}.json")
    try:
        record = jsontext.loads(own_file(path, private=private))
    except ValueError:
        raise DoorError(f"{path} is not JSON") from None
    if not isinstance(record, dict) or record.get("pid") != pid:
        raise DoorError(f"{path} does not name pid {pid}")
    return path, record


def live_records(folder: str, read: Read) -> list[tuple[int, dict[str, Any]]]:
    """Every record of ``folder`` that ``read`` passes, by pid (none: the folder
    cannot be listed)."""
    from .line_socket import DoorError

    try:
        names = record_names(folder)
    except DoorError:
        return []
    found = []
    for name in names:
        pid = int(name[:-5])
        try:
            found.append((pid, read(folder, pid)))
        except DoorError:
            continue
    return found


def bridges(folder: str, read: Read, key: str, mailbox: str) -> list[tuple[str, int]]:
    """The agents the live bridges of ``mailbox`` list in ``folder`` (a bridge's record
    carries ``{"agent": …, "mailbox": …}`` under ``key``), with their pids. A raw look
    for ``key`` first: the checked read of every record only when one carries it."""
    from ..core.durable import any_json_holds

    if not any_json_holds(folder, f'"{key}"'.encode()):
        return []
    found = []
    for pid, record in live_records(folder, read):
        mark = record.get(key)
        if isinstance(mark, dict) and mark.get("mailbox") == mailbox:
            found.append((str(mark.get("agent")), pid))
    return found
