"""How a send reaches agents of peer nodes (``AGENT@NODE``): the rules of the sending side.

Reached from :mod:`.sending` only when a recipient holds ``@``, so a local send loads
none of it. An address names an agent of a peer when its node is one of this node's
peers (config.json ``peers``); a node that was a peer and was removed is refused in one
line (nothing is sent); anything else after ``@`` stays a session prefix
(``bob@1a2b``: one session of the local bob). The message is kept for each node
before the send returns (:func:`mailslot.peers.outbox.keep`), in the same door as a
local delivery, and the watcher carries it (:mod:`mailslot.peers.carrier`).
"""

from __future__ import annotations

from contextlib import suppress

from ..core.addresses import split
from ..core.errors import InvalidInput, MailslotError, Refused
from ..peers import peer_config as settings
from ..peers.state import PeerState

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ..core.message import Message
    from .mailbox_base import MailboxBase

    Before = Callable[[Message], Callable[[], None] | None]


def nodes_for(box: MailboxBase, to: str | Sequence[str]) -> set[str]:
    """The nodes an address in ``to`` may name: this node's peers, and those it removed
    (so a send to one is refused by name); none when no recipient holds ``@``."""
    raw = [to] if isinstance(to, str) else list(to)
    if not any(isinstance(entry, str) and "@" in entry for entry in raw):
        return set()
    found = set(settings.peers(box.config.raw))
    with suppress(MailslotError):  # unreadable: the send names the node as no peer
        found.update(key[0] for key, record in PeerState(box.store).items("known").items()
                     if isinstance(record, dict) and record.get("removed"))
    return found


def check(box: MailboxBase, names: Sequence[str]) -> list[str]:
    """Refuse an address of a node that is no peer now; a note for each agent its
    node's roster does not list (sent anyway: the roster may be older than the agent)."""
    peers = settings.peers(box.config.raw)
    notes = []
    known = None
    for name in names:
        agent, node = split(name)
        if node is None:
            continue
        if node not in peers:
            raise Refused(f"{node} is no peer of this node now (it was removed: mailslot "
                          f"peer add {node} SSH_DEST adds it again); nothing was sent")
        if known is None:
            known = PeerState(box.store).items("known")
        record = known.get((node,))
        roster = record.get("roster") if isinstance(record, dict) else None
        if isinstance(roster, list) and roster and agent not in roster:
            notes.append(f"{node}'s roster (as last synced) has no {agent}; it goes anyway")
    return notes


def keeper(box: MailboxBase, before: Before | None) -> Before:
    """``before`` for :func:`mailslot.mail.posting.post`: the message kept for every
    node it names, durably, before any local copy is delivered."""
    from ..peers.nodes import node_name
    from ..peers.outbox import keep

    state = PeerState(box.store)
    here = node_name(box.config.raw)

    def keep_for_peers(message: Message) -> Callable[[], None] | None:
        if before is not None:
            before(message)
        return keep(state, message, here)

    return keep_for_peers


def reply_address(box: MailboxBase, sender: str) -> str:
    """Where a reply to mail from ``sender`` (an agent of a peer) goes: back to it, on
    its node, while that node is a peer."""
    agent, node = split(sender)
    if node is None or node not in settings.peers(box.config.raw):
        raise InvalidInput(f"{sender} is on node {node}, which is no peer of this node now; "
                           "nothing was sent")
    return f"{agent}@{node}"
