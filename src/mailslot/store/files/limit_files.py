"""The file store's token buckets (rules in :mod:`mailslot.mail.governor`)::

    limits/<key>     "TOKENS AT": what the bucket held, and when (seconds since the epoch)
    limits/lock      held while buckets are read and written

A part of :class:`~mailslot.store.files.file_store.FileStore` (a base class of it). Each
bucket is replaced whole by a rename under the lock, so two senders at once never lose
each other's take. Not synced: a crash may forget the latest takes, which only lets a
few more messages through, never holds one back. ``os`` only.
"""

from __future__ import annotations

import os

from ..format import check_bucket_keys
from .fs import FileLock, read_file, store_error
from .layout import MailboxFiles

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence


class LimitFiles(MailboxFiles):
    """The :class:`~mailslot.store.roles.Limits` role of
    :class:`~mailslot.store.files.file_store.FileStore`."""

    def update_buckets(self, keys: Sequence[str],
                       change: Callable[[dict[str, tuple[float, float]]], bool]) -> bool:
        check_bucket_keys(keys)
        folder = self._folder("limits", create=True)
        with FileLock(os.path.join(folder, "lock"), "the governor's buckets"):
            held = {key: found for key in keys
                    if (found := self._bucket(os.path.join(folder, key))) is not None}
            if not change(held):
                return False
            for key in keys:
                path = os.path.join(folder, key)
                if key in held:
                    tokens, at = held[key]
                    staged = self._stage(f"{tokens!r} {at!r}\n".encode(), "bucket",
                                         sync=False)
                    os.rename(staged, path)
                elif os.path.lexists(path):
                    os.unlink(path)
            return True

    @staticmethod
    def _bucket(path: str) -> tuple[float, float] | None:
        """A stored bucket; a missing or unreadable one is full (``None``): a damaged
        file lets mail through rather than stopping it."""
        try:
            words = read_file(path).split()
            return float(words[0]), float(words[1])
        except (FileNotFoundError, ValueError, IndexError):
            return None
        except OSError as exc:
            raise store_error(exc, f"cannot read the bucket {path}") from None
