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
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .results import Session

if TYPE_CHECKING:
    from .store import Store

HEARTBEAT_SECONDS = 10.0
STALE_SECONDS = 3 * HEARTBEAT_SECONDS


def _now() -> datetime:
    return datetime.now().astimezone()


def is_online(session: Session, now: datetime, here: str) -> bool:
    """Does this server count as online: not stopped, a fresh heartbeat and, on this
    machine (``here``), a live process?"""
    if session.stopped is not None:
        return False
    beat = _parse(session.heartbeat)
    if beat is None or (now - beat).total_seconds() > STALE_SECONDS:
        return False
    return session.hostname != here or pid_alive(session.pid)


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
        online = [s for s in sessions if is_online(s, now, here)]
        seen = [(when, s.last_seen) for s in sessions if (when := _parse(s.last_seen))]
        result[agent] = AgentPresence(bool(online), max(seen)[1] if seen else None, online)
    return result


class Beacon:
    """A running server's own record: announce on start, beat while up, stop on exit."""

    def __init__(
        self,
        store: Store,
        agent: str,
        *,
        program: str | None = None,
        cwd: str | None = None,
        channel: bool = False,
        clock: Callable[[], datetime] = _now,
        session: str | None = None,
        key: str | None = None,
    ) -> None:
        self.store = store
        self.agent = agent
        self.pid = os.getpid()
        self.key = key or str(self.pid)  # one record per server: several in one process
        # (serve --http) need keys of their own
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
        if session is not None:  # issue 12: fencing names a server by its session id
            self._record["session"] = session

    def announce(self) -> None:
        """Write the record, first forgetting this agent's servers that are gone."""
        now = self._clock()
        for record in self.store.presence():
            if record["agent"] != self.agent or record["key"] == self.key:
                continue
            session = Session.from_record(record)
            if session is None or (session.hostname == self.hostname
                                   and not is_online(session, now, self.hostname)):
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
