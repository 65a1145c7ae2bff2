"""The storage interface: what the service needs from any backend, and nothing more.

A store knows where messages are and moves them; it holds no rule about who may do
what (that is :class:`mailslot.mailbox.Mailbox`). Every method is safe to call from many
processes at once: a state change another process already made is success, not an error.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from ..message import Message, State

Event = Mapping[str, Any]
"""One line of the events log: ``{"ts": ..., "event": "delivered", "id": ..., ...}``."""


@dataclass(frozen=True)
class StoredFile:
    """A file the store keeps, as ``doctor`` reports it."""

    path: str
    age_seconds: float


class Store(Protocol):
    """Where messages, broadcasts, seen sets, events and the config live."""

    location: str
    """Where the store is, for people (a folder path, a database address)."""

    # Directed mail -------------------------------------------------------------
    def deliver(self, message: Message, recipients: Sequence[str]) -> None:
        """Make ``message`` unread for every recipient, durably, before returning."""

    def entries(self, agent: str, states: Iterable[State]) -> list[tuple[str, State]]:
        """The ids in ``agent``'s mailbox in those states, in no particular order."""

    def load(self, agent: str, message_id: str, *, header_only: bool = False
             ) -> tuple[Message, State]:
        """The message and its state for ``agent``; raises ``NotFound``."""

    def state_of(self, agent: str, message_id: str) -> State | None:
        """The state of ``message_id`` for ``agent``, or ``None`` if it has no copy."""

    def move(self, agent: str, message_id: str, to: State) -> State:
        """Move the message to ``to`` (never backwards from done); return its old state."""

    def path_of(self, agent: str, message_id: str) -> str | None:
        """Where a person finds this message, if anywhere."""

    # Broadcasts ----------------------------------------------------------------
    def publish(self, message: Message) -> None:
        """Make a broadcast standing, durably, before returning."""

    def broadcast_ids(self, *, live: bool = True) -> list[str]:
        """Ids of standing (``live``) or retracted broadcasts."""

    def load_broadcast(self, message_id: str, *, header_only: bool = False
                       ) -> tuple[Message, bool]:
        """The broadcast and whether it still stands; raises ``NotFound``."""

    def retract(self, message_id: str) -> bool:
        """Move a standing broadcast aside; ``False`` if it already was."""

    def seen(self, agent: str) -> set[str]:
        """Broadcast ids ``agent`` has been served."""

    def add_seen(self, agent: str, message_ids: Sequence[str]) -> None:
        """Record broadcasts as served to ``agent``, durably."""

    def archive_mailbox(self, agent: str, stamp: str) -> str:
        """Set ``agent``'s whole mailbox aside, kept, out of :meth:`agent_names`; return
        where it went. Raises ``NotFound`` if it has none."""

    # Everything else -----------------------------------------------------------
    def agent_names(self) -> list[str]:
        """Names that have a mailbox."""

    def append_event(self, event: Event) -> None:
        """Add a receipt to the events log (best effort: the folders are the truth)."""

    def events(self) -> Iterator[dict[str, Any]]:
        """Every readable receipt, oldest first."""

    def load_config(self) -> dict[str, Any]:
        """The raw config (``{}`` when there is none); raises ``StoreError`` if unreadable."""

    def save_config(self, config: Mapping[str, Any]) -> None:
        """Replace the config atomically."""

    def staging(self) -> list[StoredFile]:
        """Files in the staging area: a crashed writer's leftovers if old."""

    def remove_staging(self, item: StoredFile) -> None:
        """Delete one staging file."""

    def problems(self) -> list[str]:
        """Unsafe permissions, planted symlinks and unreadable files, one line each."""

    def fix_permissions(self) -> int:
        """Tighten folders to 0700 and files to 0600; return how many were changed."""

    # Presence (running MCP servers; see mailslot.presence) ----------------------
    def write_presence(self, agent: str, key: str, record: Mapping[str, Any]) -> None:
        """Replace ``agent``'s presence record ``key`` atomically (announce or heartbeat)."""

    def presence(self) -> list[dict[str, Any]]:
        """Every readable presence record of every agent, each with its ``agent`` and ``key``."""

    def remove_presence(self, agent: str, key: str) -> None:
        """Forget one presence record (gone already is fine)."""

    # Wake queue (issue 5; rules in mailslot.wake) ---------------------------------
    def wake_enqueue(self, entry: WakeEntry) -> bool:
        """Queue a wake durably; ``False`` if one is already queued for that message."""

    def wake_agents(self) -> list[str]:
        """Agents with queued or claimed wakes."""

    def wake_pending(self, agent: str) -> list[WakeEntry]:
        """The wakes queued for ``agent`` (claimed ones excluded), in no particular order."""

    def wake_claim(self, entry: WakeEntry) -> WakeEntry | None:
        """Take a queued wake atomically; ``None`` if another process took it first."""

    def wake_release(self, claimed: WakeEntry, retry: WakeEntry | None = None) -> None:
        """End a claim: queue ``retry`` first (if given), then drop the claim."""

    def wake_lock(self, agent: str) -> AbstractContextManager[bool]:
        """Hold ``agent``'s wake lock (yields ``False`` if another holder has it).

        Held while claiming and waking, released by the system if the holder dies, so
        a claim found while holding the lock was left by a holder that stopped.
        """

    def wake_orphans(self, agent: str) -> list[WakeEntry]:
        """Claims for ``agent``: call only while holding its lock (then all are orphans)."""

    def wake_signal_path(self) -> str | None:
        """A folder in which a file is created whenever a wake is queued, or ``None``.

        ``None`` means the backend has no such folder: watchers poll instead.
        """

    # Watching ------------------------------------------------------------------------
    def arrivals_path(self, agent: str) -> str | None:
        """A folder whose file-system events signal new mail for ``agent`` (``None``: poll)."""


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
