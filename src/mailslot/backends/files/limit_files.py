"""The file store's token buckets (namespace ``limits``; rules in
:mod:`mailslot.mail.governor`)::

    limits/<kind>.<agent>    one line a bucket whose key starts so: "KEY TOKENS AT"

The buckets are grouped by their key's first two parts (``sends.SENDER`` holds
``sends.SENDER`` and every ``sends.SENDER.RECIPIENT``; ``wakes.AGENT`` every
``wakes.AGENT.SENDER``), so one send opens one file. The file is its own lock: it is
opened, ``flock``-ed, read and rewritten in place, so two senders at once each see the
other's take (files of several groups are locked in name order); a group is read under
a shared lock. Not synced, and not replaced atomically: a crash may leave the latest
takes forgotten or a line cut, and a line that cannot be read is a full bucket. Either
lets a few more messages through; neither ever holds one back. ``os`` and ``fcntl``
only.
"""

from __future__ import annotations

import fcntl
import os

from ...core.durable import open_file
from .fs import LOCK, READ, file_names

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from ...store.namespaces import Key
    from .layout import MailboxFiles

    Buckets = dict[Key, tuple[float, float]]


def _group(key: Key) -> str:
    return ".".join(key[:2])


def update(store: MailboxFiles, keys: Sequence[Key], change: Callable[[Buckets], bool]
           ) -> bool:
    """Lock the groups of ``keys`` in name order, let ``change`` edit the buckets stored
    for ``keys``, and write each group back with what it left (a key taken out: gone)."""
    folder = store._folder("limits", create=True)
    groups = sorted({_group(key) for key in keys})
    opened: list[tuple[int, dict[str, tuple[float, float]]]] = []
    try:
        for group in groups:  # in name order: two takes never wait on each other
            fd = open_file(os.path.join(folder, group), LOCK)
            opened.append((fd, {}))
            fcntl.flock(fd, fcntl.LOCK_EX)
            opened[-1] = (fd, _parse(_read_all(fd)))
        stored: dict[str, tuple[float, float]] = {}
        for _, lines in opened:
            stored.update(lines)
        held = {key: stored[".".join(key)] for key in keys if ".".join(key) in stored}
        if not change(held):
            return False
        wanted = {".".join(key) for key in keys}
        for (fd, lines), group in zip(opened, groups, strict=True):
            kept = {k: v for k, v in lines.items() if k not in wanted}
            kept.update((".".join(k), v) for k, v in held.items() if _group(k) == group)
            data = "".join(f"{k} {t!r} {a!r}\n" for k, (t, a) in sorted(kept.items()))
            os.pwrite(fd, data.encode(), 0)
            os.ftruncate(fd, len(data))
        return True
    finally:
        for fd, _ in opened:
            os.close(fd)


def items(store: MailboxFiles, prefix: Key) -> Buckets:
    """The stored buckets whose key starts with ``prefix``, each group read under a
    shared lock (a reading: it waits for a take, locks nothing another take needs)."""
    folder = store._folder("limits")
    if len(prefix) >= 2:
        groups = [_group(prefix)]
    else:
        groups = sorted(n for n in file_names(folder) if n.split(".")[:len(prefix)]
                        == list(prefix))
    found: Buckets = {}
    for group in groups:
        try:
            fd = open_file(os.path.join(folder, group), READ)
        except FileNotFoundError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)  # a take rewrites the file in place
            lines = _parse(_read_all(fd))
        finally:
            os.close(fd)
        found.update((tuple(k.split(".")), v) for k, v in sorted(lines.items())
                     if tuple(k.split("."))[:len(prefix)] == prefix)
    return found


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks)


def _parse(data: bytes) -> dict[str, Any]:
    """The buckets a group's file holds; a line that cannot be read is left out (a full
    bucket: a damaged file lets mail through rather than stopping it)."""
    found: dict[str, tuple[float, float]] = {}
    for line in data.decode("utf-8", "replace").splitlines():
        words = line.split()
        try:
            found[words[0]] = (float(words[1]), float(words[2]))
        except (ValueError, IndexError):
            continue
    return found
