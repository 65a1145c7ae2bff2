"""The values a store hands out and takes back, shared by the protocol and every backend.

Kept apart from :mod:`.base` so a backend can use them without importing the protocol
it implements (the layers point down only; see docs/architecture.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class StoredFile:
    """A file the store keeps, as ``doctor`` reports it."""

    path: str
    age_seconds: float


@dataclass(frozen=True)
class WakeEntry:
    """One queued wake: wake ``agent`` for ``message_id``, attempt ``attempt``.

    ``not_before`` is a Unix time; ``claim`` is the store's handle once claimed.
    """

    message_id: str
    agent: str
    attempt: int = 1
    not_before: float = 0.0
    claim: str | None = None


class Watching(Protocol):
    """A running watch (see :meth:`Store.watch`)."""

    how: str
    """What is watched and how, for people (``mail for claude (inotify events)``)."""

    def close(self) -> None:
        """Stop watching."""


NOTIFY_QUEUES = 8
"""How many notifier queues a store keeps (issue 18): one per place in an agent's
``notify`` list, so at most this many notifiers per agent."""
