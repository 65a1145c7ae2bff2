"""Mail for peers, kept here until it has gone: queued, sealed, sent back.

A send to ``AGENT@NODE`` is kept before it returns (the same door a local send passes:
:mod:`mailslot.mail.posting`): the sender's copy in ``sent/<sender>/<id>``, and one
outbox item per node in ``outbox/<node>/<id>``, holding the envelope's fields fixed
once (its ``eid`` and time): a retry sends the very same envelope, so the receiver knows
it again (idempotent by message id and by envelope id). The item leaves the outbox when
the other node answered for it: stored, a duplicate, or refused (then sent back to its
sender with the reason), or when it waited longer than ``peer_bounce_hours`` (sent back
too). Every step is a receipt in the events log: ``forwarded`` and ``bounced``.
"""

from __future__ import annotations

import time

from ..core.addresses import split
from ..core.dates import UTC, datetime
from ..core.errors import MailslotError
from ..core.ids import sender_of
from ..core.message import Message, to_bytes
from ..mail.posting import Notifier
from .envelope import eid_time, new_eid, seal, sealed_at

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from ..store import Store
    from .nodes import NodeKey
    from .state import Key, PeerState


def nodes_of(names: Sequence[str]) -> dict[str, list[str]]:
    """The remote names among ``names``, by node."""
    found: dict[str, list[str]] = {}
    for name in names:
        agent, node = split(name)
        if node is not None:
            found.setdefault(node, []).append(agent)
    return found


def keep(state: PeerState, message: Message, here: str) -> Callable[[], None]:
    """Keep ``message`` for every node it names: the sender's copy and one outbox item
    per node, durably; returns what takes them back (the id clashed: nothing was sent)."""
    text = to_bytes(message).decode("utf-8")
    now = time.time()
    written: list[tuple[str, Key]] = []
    if not state.add("sent", (message.sender, message.id), {"message": text}):
        from ..core.errors import IdTaken

        raise IdTaken(f"{message.id} is already kept as sent; nothing was written")
    written.append(("sent", (message.sender, message.id)))
    for node in nodes_of(message.to):
        state.add("outbox", (node, message.id), {
            "kind": "mail", "queued": now, "eid": new_eid(now), "at": sealed_at(now),
            "from": here, "to": node, "message": text})
        written.append(("outbox", (node, message.id)))

    def undo() -> None:
        for space, key in written:
            state.delete(space, key)

    return undo


def waiting(state: PeerState, node: str, most: int) -> list[tuple[str, dict[str, Any]]]:
    """The oldest ``most`` items waiting for ``node`` (mail by time, then receipts)."""
    keys = state.keys("outbox", (node,))[:most]
    found = []
    for key in keys:
        value = state.get("outbox", key)
        if isinstance(value, dict):
            found.append((key[1], value))
    return found


_ENVELOPE = ("kind", "from", "to", "eid", "at", "message", "event")


def sealed(item: dict[str, Any], key: NodeKey, here: str) -> dict[str, Any]:
    """The envelope of an outbox item, signed by this node (Ed25519 is deterministic:
    the same item gives the same envelope every time it is sent)."""
    return seal({**{k: item[k] for k in _ENVELOPE if k in item}, "from": here}, key)


def settle(store: Store, state: PeerState, node: str, item_key: str,
           item: dict[str, Any], result: dict[str, Any]) -> None:
    """Act on the other node's answer for one item: receipts and bounces, then forget it
    (an ``error``, the other node's store failing, leaves it queued)."""
    if result.get("outcome") not in ("stored", "duplicate", "refused"):
        return
    if item.get("kind") == "mail":
        outcome = result.get("outcome")
        refused = result.get("refused")
        refused = refused if isinstance(refused, dict) else {}
        agents = nodes_of(_to(item)).get(node, [])
        for agent in agents:
            address = f"{agent}@{node}"
            if outcome == "refused" or agent in refused:
                why = str(refused.get(agent) or result.get("reason") or "refused")
                bounce(store, item_key, address, f"{node} refused it: {why}")
            elif outcome in ("stored", "duplicate"):
                _event(store, "forwarded", item_key, address)
    state.delete("outbox", (node, item_key))


def _to(item: dict[str, Any]) -> list[str]:
    from ..core.message import from_bytes

    try:
        return list(from_bytes(str(item["message"]).encode(), name="outbox",
                               header_only=True).to)
    except (MailslotError, KeyError):
        return []


def expire(store: Store, state: PeerState, node: str, older: float, why: str) -> int:
    """Send back every item for ``node`` queued before ``older`` (a Unix time)."""
    gone = 0
    for item_key, item in waiting(state, node, 1 << 30):
        queued = item.get("queued")
        if isinstance(queued, (int, float)) and queued < older:
            if item.get("kind") == "mail":
                for agent in nodes_of(_to(item)).get(node, []):
                    bounce(store, item_key, f"{agent}@{node}", why)
            state.delete("outbox", (node, item_key))
            gone += 1
    return gone


def bounce(store: Store, message_id: str, address: str, why: str) -> None:
    """Tell the sender, once, that ``message_id`` did not reach ``address``, and why."""
    _event(store, "bounced", message_id, address, reason=why)
    sender = sender_of(message_id)
    try:
        Notifier(store).tell(sender, f"undelivered: your message to {address}",
                             f"Your message {message_id} did not reach {address}: {why}.\n\n"
                             f"`mailslot status {message_id}` shows where it stands.\n")
    except MailslotError:
        return  # the receipt says it; a notice that cannot be written is not a loss


def _event(store: Store, kind: str, message_id: str, agent: str, **extra: Any) -> None:
    record = {"ts": datetime.now(UTC).astimezone().isoformat(), "event": kind,
              "id": message_id, "agent": agent, **extra}
    try:
        store.append_event(record)
    except MailslotError:
        return


def queued_since(state: PeerState, node: str) -> float | None:
    """When the oldest item waiting for ``node`` was queued (``None``: nothing waits)."""
    for key in state.keys("outbox", (node,))[:1]:
        item = state.get("outbox", key)
        if isinstance(item, dict) and isinstance(item.get("queued"), (int, float)):
            return float(item["queued"])
    return None


def prune_received(state: PeerState, node: str, older: float) -> int:
    """Forget envelope ids of ``node`` taken before ``older`` (outside the window, an
    envelope is refused by its time anyway)."""
    gone = 0
    for key in state.keys("received", (node,)):
        if eid_time(key[1]) < older:
            gone += state.delete("received", key)
        else:
            break  # sorted: the rest are newer
    return gone
