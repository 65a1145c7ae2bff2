"""Facts about a process of this machine from ``/proc``: whether a pid is still the
process it was (its start time), and what it runs (its command line).

A pid alone is no identity: it is reused once its process ends. A record that names a
process (the watcher's, a hook session's) names its start time too, and anything done
to that pid later (a signal above all) first checks that the start time is the same.
Linux only; elsewhere every answer is ``None`` (unknown), and callers decide what an
unknown means for them. On the hook path: imports ``os`` only.
"""

from __future__ import annotations


def stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` from the third on (state, parent pid, ...: the
    command name, which may hold spaces and parentheses, cut off); ``None`` when there is
    no such process (or no ``/proc``)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode("ascii", "replace")
    except OSError:
        return None
    fields = raw[raw.rfind(")") + 2:].split()
    return fields if len(fields) >= 20 else None


def start_time(pid: int) -> str | None:
    """When ``pid`` started, in clock ticks since boot (field 22 of ``/proc/PID/stat``);
    ``None`` for no such process, a zombie (it has ended) or no ``/proc``."""
    fields = stat_fields(pid)
    return None if fields is None or fields[0] == "Z" else fields[19]


def command_line(pid: int) -> list[str] | None:
    """``pid``'s argv as the kernel holds it (``/proc/PID/cmdline``); ``None`` when
    unknown."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    return [word.decode("utf-8", "surrogateescape") for word in raw.split(b"\0")[:-1]]
