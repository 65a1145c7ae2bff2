"""Is this process inside a sandbox its own starters are not in?

A send may run inside a sandbox: a shell a host started with no network (a network
namespace, ``unshare -n``, bubblewrap), another view of the files (a mount namespace),
its own process tree or user ids, or a seccomp filter. A helper this process starts
inherits all of it, so the on-demand watcher must not be started from there
(docs/wake.md, "The watcher starts itself"): every program it woke would run in the
sandbox too, for as long as it lived.

The rule, on Linux: the process is in a sandbox when one of its namespaces (network,
mount, process ids, user ids, host name, IPC) differs from that of PID 1 or of any of
its ancestors, or when it has more seccomp filters than one of them. A process whose
namespace links cannot be read (another user's, or one that is not dumpable) is passed
over, but its parent is still followed (``/proc/PID/stat`` is readable by all). So a
sandbox made below the person's own session is found whoever runs it; a machine or
container whose every process shares the namespaces (the usual case) is no sandbox.
Not found: a sandbox that also hides every process outside it (a new process-id
namespace whose ``/proc`` shows only its own, its starter gone) and one made of an
LSM alone (Landlock); docs/security.md says so. Elsewhere than Linux there is nothing
to compare: no sandbox is reported.

On the send path, but only when a watcher is about to be started: it imports ``os``.
"""

from __future__ import annotations

import os

KINDS = {"net": "network", "mnt": "mount", "pid": "process id", "user": "user id",
         "uts": "host name", "ipc": "IPC"}
"""The namespaces compared, and how a person calls each."""
_DEPTH = 64  # ancestors looked at, at most (a loop in a changing process table ends)


def sandboxed() -> str | None:
    """Why this process counts as sandboxed (``"its network namespace is not that of
    pid 812, above it"``), or ``None``."""
    mine = _namespaces("self")
    if not mine:
        return None  # no /proc: not Linux
    if _read("self/stat").split(b" ", 1)[0] != str(os.getpid()).encode():
        return "its process ids are not those /proc shows"  # a PID namespace, old /proc
    users, filters = _read("self/uid_map"), _seccomp("self")
    for pid in [*_ancestors(), 1]:
        theirs = _namespaces(str(pid))
        for kind, name in KINDS.items():
            if kind in theirs and kind in mine and theirs[kind] != mine[kind]:
                return f"its {name} namespace is not that of pid {pid}, above it"
        if users and _read(f"{pid}/uid_map") not in (b"", users):  # read from inside
            return f"its user id namespace is not that of pid {pid}, above it"
        other = _seccomp(str(pid))
        if filters is not None and other is not None and filters > other:
            return f"it has a seccomp filter that pid {pid}, above it, has not"
    return None


def _read(name: str) -> bytes:
    """``/proc/NAME``'s bytes (empty when it cannot be read)."""
    try:
        with open(f"/proc/{name}", "rb") as f:
            return f.read()
    except OSError:
        return b""


def _namespaces(pid: str) -> dict[str, int]:
    """Each namespace's id (its inode) that can be read for ``pid``."""
    found = {}
    for kind in KINDS:
        try:
            found[kind] = os.stat(f"/proc/{pid}/ns/{kind}").st_ino
        except OSError:  # gone, another user's, or not dumpable
            continue
    return found


def _seccomp(pid: str) -> int | None:
    """How many seccomp filters ``pid`` has (its mode, 0 or 2, before Linux 5.9)."""
    status = _read(f"{pid}/status").decode("ascii", "replace")
    fields = dict(line.partition(":")[::2] for line in status.splitlines())
    raw = fields.get("Seccomp_filters", fields.get("Seccomp", "")).strip()
    return int(raw) if raw.isdigit() else None


def _ancestors() -> list[int]:
    """This process's parent, its parent's, ... up to (not including) PID 1."""
    found: list[int] = []
    pid = os.getppid()
    while pid > 1 and pid not in found and len(found) < _DEPTH:
        found.append(pid)
        tail = _read(f"{pid}/stat").rpartition(b")")[2].split()  # a name may hold ") "
        if len(tail) < 2 or not tail[1].isdigit():
            break
        pid = int(tail[1])
    return found
