"""What ``/proc`` says about a running process: when it started, its command line, its
parent, the sockets it holds.

mailslot trusts a record naming a pid (a host session's, a sidecar's, a binding's
launcher) only when that pid is the process the record means, not a stranger that reused
the number or a record someone wrote naming a process they do not own. Everything here
answers ``None`` where ``/proc`` cannot tell (macOS, another user's process): the caller
decides what an unknown means. ``os`` only: modules on the hook path use it.
"""

from __future__ import annotations

import os

_BOOT: list[float] = []


def stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name (field 3 on); ``None``
    for a process that is gone, a zombie, or where ``/proc`` is missing."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    fields = raw[raw.rfind(")") + 2:].split()
    return fields if len(fields) > 19 and fields[0] != "Z" else None


def start_ticks(pid: int) -> str | None:
    """Field 22 of ``/proc/PID/stat``: the start time in clock ticks since boot, as text
    (as a host's session record may hold it)."""
    fields = stat_fields(pid)
    return None if fields is None else fields[19]


def started_at(pid: int) -> float | None:
    """When ``pid`` started, as a Unix time (to the second the kernel's boot time has)."""
    ticks = start_ticks(pid)
    boot = _boot_time()
    if ticks is None or boot is None:
        return None
    return boot + int(ticks) / os.sysconf("SC_CLK_TCK")


def started_after(pid: int, written: float) -> bool:
    """Did ``pid`` start after ``written`` (a file's time), so that it cannot have
    written that file? A second of slack covers the boot time's rounding; ``False``
    where it cannot be told."""
    began = started_at(pid)
    return began is not None and began > written + 1.0


def _boot_time() -> float | None:
    if not _BOOT:
        try:
            with open("/proc/stat", encoding="ascii", errors="replace") as f:
                line = next(x for x in f if x.startswith("btime "))
            _BOOT.append(float(line.split()[1]))
        except (OSError, StopIteration, ValueError, IndexError):
            return None
    return _BOOT[0]


def command_line(pid: int) -> list[str] | None:
    """``pid``'s arguments as it was started (or as it rewrote them: a program may set
    its title there)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            raw = f.read(1 << 16)
    except OSError:
        return None
    return [part.decode("utf-8", "replace") for part in raw.split(b"\0") if part] or None


def parent_of(pid: int) -> int | None:
    fields = stat_fields(pid)
    return None if fields is None else int(fields[1])


def descends_from(pid: int, ancestor: int) -> bool | None:
    """Is ``ancestor`` the process ``pid`` or one of its ancestors? ``None``: unknown
    (no ``/proc``, or a process of the chain ended while it was walked)."""
    for _ in range(4096):
        if pid == ancestor:
            return True
        if pid <= 1:
            return False
        parent = parent_of(pid)
        if parent is None:
            return None
        pid = parent
    return False


def holds_socket(pid: int, path: str) -> bool | None:
    """Does ``pid`` hold a Unix socket bound at ``path`` (``/proc/net/unix`` and the
    process's open files)? ``None``: cannot be told here."""
    try:
        with open("/proc/net/unix", encoding="utf-8", errors="replace") as f:
            bound = {int(parts[6]) for line in f
                     if len(parts := line.split(None, 7)) == 8
                     and parts[7].rstrip("\n") == path and parts[6].isdigit()}
        held = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return None
    for fd in held:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:[") and int(target[8:-1]) in bound:
            return True
    return False
