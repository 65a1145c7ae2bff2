"""The host process that ran a hook (the agent host's program), seen from ``/proc``.

Shared by a host's background waiter (:mod:`.wait`: is the host still there?) and the session
hooks (:mod:`.hook_entry`: which process a hook session belongs to, so the MCP server that host
started can tell the session is its own). ``os`` only: on the hook path.
"""

from __future__ import annotations

import os

SHELLS = frozenset({"sh", "dash", "bash", "zsh", "ash", "busybox"})
"""A hook's parent with one of these names is the ``sh -c`` between it and the host."""


Process = tuple[int, str | None]
"""A process as a pid and its start time (``None`` where ``/proc`` is missing)."""


def host_process() -> Process:
    """The program that ran this hook: the parent, or its parent when the parent is the
    shell of ``sh -c`` (which stays while the hook runs, even after the host ended)."""
    pid = os.getppid()
    stat = _stat(pid)
    if stat is not None and stat[0] in SHELLS and stat[1] > 1:
        pid = stat[1]
        stat = _stat(pid)
    return pid, None if stat is None else stat[2]


def alive(process: Process) -> bool:
    """Is that very process still running (a reused pid does not count)?"""
    pid, start = process
    if start is None:  # no /proc (macOS): the parent is gone when we were re-parented
        return os.getppid() == pid
    stat = _stat(pid)
    return stat is not None and stat[2] == start


def _stat(pid: int) -> tuple[str, int, str] | None:
    """``(name, parent pid, start time)`` from ``/proc/PID/stat``; ``None`` if unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    name = raw[raw.find("(") + 1: raw.rfind(")")]
    fields = raw[raw.rfind(")") + 2:].split()
    if len(fields) < 20 or fields[0] == "Z":  # a zombie has ended
        return None
    return name, int(fields[1]), fields[19]
