"""What peers keep: the store's ``peers.*`` namespaces, by their short names.

Every record is one JSON object in a keyed-records namespace of the store
(:mod:`mailslot.store.namespaces`, which checks each key; docs/format.md, "Peers"), so a
folder, PostgreSQL and the memory store keep peers alike, and ``migrate`` and backups
carry them with everything else:

``node``      ``()``                this node's public key (never the private one)
``known``     ``(node,)``           a peer: its pinned key, roster, removed or not
``links``     ``(node,)``           how the link to a peer went last (up, since, error)
``outbox``    ``(node, item)``      what waits to go to a peer: mail by its id, receipts
``sent``      ``(agent, id)``       the sender's copy of mail that went (only) to peers
``received``  ``(node, envelope)``  envelopes taken from a peer (replays are refused)
``progress``  ``(node,)``           how far the events log was read for a peer's receipts

``received``, ``links`` and ``progress`` are written without a sync in the file store:
losing the newest of them to a power cut sends a receipt twice or a duplicate once more,
which the other side takes as a duplicate (nothing stored twice).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..store import Store

    Key = tuple[str, ...]


class PeerState:
    """The store's ``peers.<space>`` records under their short names; every failure a
    :class:`~mailslot.core.errors.MailslotError`, as the store's."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def get(self, space: str, key: Key) -> Any:
        return self.store.get(f"peers.{space}", key)

    def items(self, space: str, prefix: Key = ()) -> dict[Key, Any]:
        return self.store.items(f"peers.{space}", prefix)

    def keys(self, space: str, prefix: Key = ()) -> list[Key]:
        return self.store.keys(f"peers.{space}", prefix)

    def put(self, space: str, key: Key, value: Any) -> None:
        self.store.put(f"peers.{space}", key, value)

    def add(self, space: str, key: Key, value: Any) -> bool:
        return self.store.add(f"peers.{space}", key, value)

    def delete(self, space: str, key: Key) -> bool:
        return self.store.delete(f"peers.{space}", key)

