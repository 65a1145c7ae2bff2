"""The values a store hands out and takes back, shared by the protocol and every backend.

Kept apart from :mod:`.base` so a backend can use them without importing the protocol
it implements (the layers point down only; see docs/architecture.md).
"""

from __future__ import annotations

from ..core.errors import UnsafePath
from ..core.values import Protocol, dataclass
from .namespaces import NOTIFY_QUEUES


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


@dataclass(frozen=True)
class AgentRecord:
    """A registered agent as the store keeps it (rules in mailslot.access.authority).

    ``secret_hash`` is ``"sha256:<hex>"`` of the credential's secret: the secret itself is
    never stored. ``generation`` grows by one at each rotation; a child (``parent`` set)
    holds authority only while its ``parent_generation`` equals its parent's current
    ``generation`` and neither is revoked. ``created`` is ISO 8601 with an offset, and
    so is ``expires``, when its credential stops working (``None``: never).
    """

    name: str
    secret_hash: str
    generation: int = 1
    parent: str | None = None
    parent_generation: int | None = None
    runtime: str | None = None
    revoked: bool = False
    created: str = ""
    expires: str | None = None


class Watching(Protocol):
    """A running watch (see :meth:`Store.watch`)."""

    how: str
    """What is watched and how, for people (``mail for reviewer (inotify events)``)."""

    def close(self) -> None:
        """Stop watching."""


def notify_lane(lane: int) -> str:
    """The name of notifier queue ``lane`` (``notify-3``), the same in every store;
    anything but ``0 <= lane < NOTIFY_QUEUES`` is :class:`UnsafePath` (never a name)."""
    if isinstance(lane, bool) or not isinstance(lane, int) or not 0 <= lane < NOTIFY_QUEUES:
        raise UnsafePath(f"{lane!r} is not a notifier queue (0 to {NOTIFY_QUEUES - 1})")
    return f"notify-{lane}"
