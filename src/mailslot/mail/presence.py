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

from ..core.config import hostname, this_machine
from ..core.dates import datetime
from ..core.results import Session
from ..core.values import dataclass

TYPE_CHECKING = False  # typing is not loaded on the CLI path
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

    from ..store import Store

HEARTBEAT_SECONDS = 10.0
STALE_SECONDS = 3 * HEARTBEAT_SECONDS
HOOK_ONLINE_SECONDS = 12 * 3600.0
"""A host session counts as online while one of its hooks ran within this.
A hook runs at every prompt and tool call but a person may leave a session open and
idle for a working day, so the window is long; the record itself is forgotten after
:data:`mailslot.service.delivery.SESSION_MAX_AGE` (30 days)."""


def now_of(store: Store) -> datetime:
    """Now by the store's clock (:meth:`~mailslot.store.Store.clock`): heartbeats are
    stamped and judged stale by it, so machines whose clocks disagree still agree on who
    is online."""
    return datetime.fromtimestamp(store.clock()).astimezone()


def hook_online(seen: float, now: datetime) -> bool:
    """Does a hook session count as online: a hook ran in it within
    :data:`HOOK_ONLINE_SECONDS` (``seen``: seconds since the epoch)?"""
    return now.timestamp() - seen <= HOOK_ONLINE_SECONDS


def is_online(session: Session, now: datetime, here: str) -> bool:
    """Does this server count as online: not stopped, a fresh heartbeat and, on this
    machine (``here``), a live process?"""
    if session.stopped is not None:
        return False
    beat = _parse(session.heartbeat)
    if beat is None or (now - beat).total_seconds() > STALE_SECONDS:
        return False
    return session.hostname != here or (session.pid is not None and pid_alive(session.pid))


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
        stat = _read_text(f"/proc/{pid}/stat")
    except OSError:
        return True  # no /proc (macOS): the signal check is all we have
    return stat.rsplit(")", 1)[-1].split()[:1] != ["Z"]


def _read_text(path: str) -> str:
    """A small file's text (``open``, not ``pathlib``: every command loads this module)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def parent_program() -> str | None:
    """The name of the program that started this process (the host's program)."""
    ppid = os.getppid()
    try:
        return _read_text(f"/proc/{ppid}/comm").strip() or None
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
        clock: Callable[[], datetime] | None = None,
        session: str | None = None,
        key: str | None = None,
    ) -> None:
        self.store = store
        self.agent = agent
        self.pid = os.getpid()
        self.key = key or str(self.pid)  # one record per server: several in one process
        # (serve --http) need keys of their own
        self.hostname = hostname()
        self._clock = clock or (lambda: now_of(store))
        self._record: dict[str, Any] = {
            "pid": self.pid,
            "hostname": self.hostname,
            "machine": this_machine(),  # the watcher's name for it (agents.NAME.host)
            "program": program,
            "cwd": cwd if cwd is not None else os.getcwd(),
            "started": self._clock().isoformat(),
            "channel": channel,
        }
        if session is not None:  # fencing names a server by its session id
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


def last_machines(records: Iterable[dict[str, Any]]) -> dict[str, str]:
    """Each agent's machine where its presence was last seen (its record's ``machine``:
    ``MAILSLOT_HOST``, else the host name, as the watcher names its own): the default of
    ``agents.NAME.host``, so each machine's watcher wakes the agents living there. A
    record without one (written before there was one) decides nothing."""
    latest: dict[str, tuple[datetime, str]] = {}
    for record in records:
        session = Session.from_record(record)
        when = _parse(session.last_seen) if session is not None else None
        machine = record.get("machine")
        if when is None or not isinstance(machine, str) or not machine:
            continue
        agent = str(record["agent"])
        if agent not in latest or when > latest[agent][0]:
            latest[agent] = (when, machine)
    return {agent: machine for agent, (_, machine) in latest.items()}
