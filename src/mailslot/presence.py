"""Who is online now, and who was last seen when: the presence rules.

A running MCP server (``mailslot serve``) keeps one small record in the store for its
agent: which program started it, its pid, machine, working folder, start time and a
heartbeat it rewrites every :data:`HEARTBEAT_SECONDS`. On a clean exit it marks the record
stopped. A record counts as online while its heartbeat is younger than
:data:`STALE_SECONDS` and, on this machine, its process is still alive, so a server that
crashed or was killed stops counting at once (same machine) or after the stale window
(a shared folder seen from another machine). Records that no longer count are kept as
the agent's "last seen" until the agent's next server starts.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .mailbox import Mailbox
    from .store import Store

HEARTBEAT_SECONDS = 10.0
STALE_SECONDS = 3 * HEARTBEAT_SECONDS


def _now() -> datetime:
    return datetime.now().astimezone()


@dataclass(frozen=True)
class Session:
    """One server of an agent, as its record says."""

    pid: int
    hostname: str
    program: str | None
    cwd: str | None
    started: str
    heartbeat: str
    stopped: str | None = None
    channel: bool = False  # started with --channel: pushes arrivals into Claude Code

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Session | None:
        """A record from the store, or ``None`` if it is not shaped like one of ours."""
        pid, started, beat = record.get("pid"), record.get("started"), record.get("heartbeat")
        if isinstance(pid, bool) or not isinstance(pid, int) or pid < 1:
            return None
        if not isinstance(started, str) or not isinstance(beat, str):
            return None

        def text(key: str) -> str | None:
            value = record.get(key)
            return value if isinstance(value, str) else None

        return cls(pid, text("hostname") or "", text("program"), text("cwd"), started, beat,
                   text("stopped"), record.get("channel") is True)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def last_seen(self) -> str:
        return self.stopped or self.heartbeat

    def is_online(self, now: datetime, hostname: str) -> bool:
        if self.stopped is not None:
            return False
        beat = _parse(self.heartbeat)
        if beat is None or (now - beat).total_seconds() > STALE_SECONDS:
            return False
        return self.hostname != hostname or pid_alive(self.pid)


@dataclass(frozen=True)
class AgentPresence:
    """What ``who`` and ``list_agents`` show of an agent's servers."""

    online: bool
    last_seen: str | None
    sessions: list[Session]  # the ones online now


def _parse(stamp: str) -> datetime | None:
    try:
        when = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    return when if when.tzinfo is not None else None


def pid_alive(pid: int) -> bool:
    """True if process ``pid`` exists on this machine and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    except OSError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc (macOS): the signal check is all we have
    return stat.rsplit(")", 1)[-1].split()[:1] != ["Z"]


def hostname() -> str:
    """This machine's name (without importing :mod:`socket` where the OS can tell)."""
    try:
        return os.uname().nodename
    except AttributeError:  # Windows
        import socket

        return socket.gethostname()


def parent_program() -> str | None:
    """The name of the program that started this process (``claude``, ``codex``...)."""
    ppid = os.getppid()
    try:
        return Path(f"/proc/{ppid}/comm").read_text().strip() or None
    except OSError:
        pass
    if sys.platform == "win32":
        return None
    import subprocess

    try:
        out = subprocess.run(["ps", "-o", "comm=", "-p", str(ppid)], capture_output=True,
                             text=True, timeout=2, check=False).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return os.path.basename(out) or None


def summarize(
    records: Iterable[dict[str, Any]], now: datetime, host: str | None = None
) -> dict[str, AgentPresence]:
    """Presence per agent name, from the store's raw records."""
    here = host if host is not None else hostname()
    by_agent: dict[str, list[Session]] = {}
    for record in records:
        session = Session.from_record(record)
        if session is not None:
            by_agent.setdefault(str(record["agent"]), []).append(session)
    result: dict[str, AgentPresence] = {}
    for agent, sessions in by_agent.items():
        online = [s for s in sessions if s.is_online(now, here)]
        seen = [(when, s.last_seen) for s in sessions if (when := _parse(s.last_seen))]
        result[agent] = AgentPresence(bool(online), max(seen)[1] if seen else None, online)
    return result


class Beacon:
    """A running server's own record: announce on start, beat while up, stop on exit."""

    def __init__(
        self,
        box: Mailbox,
        *,
        program: str | None = None,
        cwd: str | None = None,
        channel: bool = False,
        clock: Callable[[], datetime] = _now,
    ) -> None:
        self.store: Store = box.store
        self.agent = box.bound_agent()
        self.pid = os.getpid()
        self.key = str(self.pid)
        self.hostname = hostname()
        self._clock = clock
        self._record: dict[str, Any] = {
            "pid": self.pid,
            "hostname": self.hostname,
            "program": program,
            "cwd": cwd if cwd is not None else os.getcwd(),
            "started": clock().isoformat(),
            "channel": channel,
        }

    def announce(self) -> None:
        """Write the record, first forgetting this agent's servers that are gone."""
        now = self._clock()
        for record in self.store.presence():
            if record["agent"] != self.agent or record["key"] == self.key:
                continue
            session = Session.from_record(record)
            if session is None or (session.hostname == self.hostname
                                   and not session.is_online(now, self.hostname)):
                self.store.remove_presence(self.agent, str(record["key"]))
        self.beat()

    def beat(self) -> None:
        self.store.write_presence(
            self.agent, self.key, {**self._record, "heartbeat": self._clock().isoformat()}
        )

    def stop(self) -> None:
        """Mark the record stopped: the agent is offline, last seen now."""
        now = self._clock().isoformat()
        self.store.write_presence(
            self.agent, self.key, {**self._record, "heartbeat": now, "stopped": now}
        )
