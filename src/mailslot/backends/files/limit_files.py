"""The file store's token buckets (rules in :mod:`mailslot.mail.governor`)::

    limits/<kind>.<agent>    one line a bucket whose key starts so: "KEY TOKENS AT"

A part of :class:`~mailslot.backends.files.file_store.FileStore` (a base class of it). The
buckets are grouped by their key's first two parts (``sends.SENDER`` holds
``sends.SENDER`` and every ``sends.SENDER.RECIPIENT``; ``wakes.AGENT`` every
``wakes.AGENT.SENDER``), so one send opens one file. The file is its own lock: it is
opened, ``flock``-ed, read and rewritten in place, so two senders at once each see the
other's take (files of several groups are locked in name order); a group is read under
a shared lock. Not synced, and not replaced atomically: a crash may leave the latest
takes forgotten or a line cut, and a line that cannot be read is a full bucket. Either lets a
few more messages through; neither ever holds one back. ``os`` and ``fcntl`` only.
"""

from __future__ import annotations

import fcntl
import os

from ...core.durable import open_file
from ...store.format import check_bucket_group, check_bucket_keys
from .fs import LOCK, READ
from .layout import MailboxFiles

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence


class LimitFiles(MailboxFiles):
    """The :class:`~mailslot.store.roles.Limits` role of
    :class:`~mailslot.backends.files.file_store.FileStore`."""

    def update_buckets(self, keys: Sequence[str],
                       change: Callable[[dict[str, tuple[float, float]]], bool]) -> bool:
        check_bucket_keys(keys)
        folder = self._folder("limits", create=True)
        groups = sorted({".".join(key.split(".")[:2]) for key in keys})
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
            held = {key: stored[key] for key in keys if key in stored}
            if not change(held):
                return False
            wanted = set(keys)
            for (fd, lines), group in zip(opened, groups, strict=True):
                kept = {k: v for k, v in lines.items() if k not in wanted}
                kept.update((k, v) for k, v in held.items()
                            if ".".join(k.split(".")[:2]) == group)
                data = "".join(f"{k} {t!r} {a!r}\n" for k, (t, a) in sorted(kept.items()))
                os.pwrite(fd, data.encode(), 0)
                os.ftruncate(fd, len(data))
            return True
        finally:
            for fd, _ in opened:
                os.close(fd)

    def bucket_group(self, group: str) -> dict[str, tuple[float, float]]:
        check_bucket_group(group)
        try:
            fd = open_file(os.path.join(self._folder("limits"), group), READ)
        except FileNotFoundError:
            return {}
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)  # a take rewrites the file in place
            found = _parse(_read_all(fd))
        finally:
            os.close(fd)
        return {k: v for k, v in found.items() if k.startswith(group + ".")}


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks)


def _parse(data: bytes) -> dict[str, tuple[float, float]]:
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
