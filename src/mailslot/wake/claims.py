"""A queue of wakes or notices, over the store's records: what the queue does.

Every queue (the wake queue ``wake``, a notifier's ``notify-N``) keeps its entries in the
store's namespace ``wake`` under ``(queue, agent, message id)``, and the entries taken
by a watcher in ``wake.claimed``. The rules are here, written once for every backend:

* an entry is queued at most once per message, queue and agent (``add``: the first
  wins);
* a watcher takes an entry by claiming it (``take``): of two watchers exactly one
  gets it;
* a retry is queued *before* its claim is dropped, so a crash in between leaves the
  wake twice, never lost;
* an agent's entries are worked while holding its lock in that queue (never waited for;
  released by the system if the holder dies), so a claim found while holding it was
  left by a holder that stopped: an orphan, tried again.

Queues never share entries, claims or locks. Light to import: a send to an agent with a
wake or a notifier queues through it.
"""

from __future__ import annotations

from ..store.records import notify_lane

TYPE_CHECKING = False
if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from ..store import Store, WakeEntry


class Queue:
    """The queue ``name`` of ``store`` (the wake queue, or :func:`notifier_queue`)."""

    def __init__(self, store: Store, name: str = "wake") -> None:
        self.store, self.name = store, name

    def enqueue(self, entry: WakeEntry) -> bool:
        """Queue ``entry`` durably; ``False`` if one is queued for that message."""
        return self.store.add("wake", (self.name, entry.agent, entry.message_id), entry)

    def agents(self) -> list[str]:
        """Agents with queued or claimed entries."""
        return sorted({key[1] for space in ("wake", "wake.claimed")
                       for key in self.store.keys(space, (self.name,))})

    def pending(self, agent: str) -> list[WakeEntry]:
        """The entries queued for ``agent`` (claimed ones apart), in no set order."""
        return list(self.store.items("wake", (self.name, agent)).values())

    def claim(self, entry: WakeEntry) -> WakeEntry | None:
        """Take a queued entry; ``None`` if another process took it first."""
        taken = self.store.take("wake", (self.name, entry.agent, entry.message_id))
        return None if taken is None else taken[1]

    def release(self, claimed: WakeEntry, retry: WakeEntry | None = None) -> None:
        """End a claim: queue ``retry`` first (if given), then drop the claim."""
        if claimed.claim is None:
            raise ValueError("release needs a claimed entry")
        if retry is not None:
            self.enqueue(retry)  # already there (a crash between the two): fine
        self.store.delete("wake.claimed", (self.name, claimed.agent, claimed.message_id,
                                           claimed.claim))

    def lock(self, agent: str) -> AbstractContextManager[bool]:
        """Hold ``agent``'s lock in this queue (``False``: another holder has it)."""
        return self.store.lock("wake", (self.name, agent))

    def orphans(self, agent: str) -> list[WakeEntry]:
        """Claims for ``agent``: call only while holding its lock (then all are orphans)."""
        return list(self.store.items("wake.claimed", (self.name, agent)).values())


def notifier_queue(store: Store, lane: int) -> Queue:
    """Notifier queue ``lane`` (one per place in an agent's ``notify`` list, ``0 <= lane
    < NOTIFY_QUEUES``; another is :class:`~mailslot.core.errors.UnsafePath`)."""
    return Queue(store, notify_lane(lane))
