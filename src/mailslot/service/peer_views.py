"""What the overviews show of peers: mail sent to agents of peers (``status``, ``sent``)
and the agents of peers (``who``).

Reached from :mod:`.overview` only when there is something of peers to show (a recipient
holding ``@``, a ``peers`` section in config.json), so a mailbox without peers loads
none of it. The sender's copy of mail that went to peers is in :mod:`mailslot.peers.state`
(``sent``); where it stands with each remote recipient comes from the receipts the
other node sent back (read, done, surfaced, a wake) and this node's own (``forwarded``:
stored there; ``bounced``: sent back), and, while it waits, from the link's state:
"queued for b: link down since …".
"""

from __future__ import annotations

from ..core.addresses import split
from ..core.errors import MailslotError
from ..core.ids import sender_of
from ..core.message import from_bytes
from ..core.names import is_valid_name
from ..core.results import AgentInfo, RecipientStatus
from ..peers import peer_config as settings
from ..peers.state import PeerState

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..core.config import Config
    from ..core.dates import datetime
    from ..core.message import Message, State
    from ..store import Store


def sent_copy(store: Store, message_id: str) -> Message | None:
    """The sender's copy of mail that went to peers, if this node keeps one."""
    sender, node = split(sender_of(message_id))
    if node is not None or not is_valid_name(sender):
        return None
    try:
        record = PeerState(store).get("sent", (sender, message_id))
        if not isinstance(record, dict):
            return None
        return from_bytes(str(record.get("message")).encode("utf-8"), name=message_id,
                          header_only=True)
    except MailslotError:
        return None


def sent_ids(store: Store, sender: str | None, limit: int | None) -> list[str]:
    """Ids of what ``sender`` (``None``: anyone) sent to peers, newest first."""
    try:
        keys = PeerState(store).keys("sent", () if sender is None else (sender,))
    except MailslotError:
        return []
    ids = sorted((key[1] for key in keys), reverse=True)
    return ids if limit is None else ids[:limit]


class Links:
    """The links and queues of the peers, read once per page of statuses."""

    def __init__(self, store: Store, config: Config) -> None:
        self.state = PeerState(store)
        self.bounce = _bounce_hours(config)
        self._links: dict[str, Any] = {}
        try:
            self.reached = set(settings.reachable(config.raw))
        except MailslotError:
            self.reached = set()

    def link(self, node: str) -> dict[str, Any]:
        if node not in self._links:
            found = self.state.get("links", (node,))
            self._links[node] = found if isinstance(found, dict) else {}
        return self._links[node]  # type: ignore[no-any-return]

    def queued(self, node: str, message_id: str) -> bool:
        return self.state.get("outbox", (node, message_id)) is not None

    def why(self, node: str) -> str:
        """``queued for b: link down since …``."""
        link = self.link(node)
        back = f"; it goes back to its sender after {self.bounce:g} h"
        if node not in self.reached:
            return (f"queued for {node}: {node} fetches it when it connects here (last "
                    f"{link.get('last_ok') or 'never'}){back}")
        if not link:
            return f"queued for {node}: not carried yet (the watcher carries it){back}"
        if not link.get("up"):
            return (f"queued for {node}: link down since {link.get('since')} "
                    f"({link.get('error')}){back}")
        return f"queued for {node}: the link is up; it goes with the next batch{back}"


def _bounce_hours(config: Config) -> float:
    try:
        return settings.bounce_seconds(config.raw) / 3600
    except MailslotError:
        return settings.DEFAULT_BOUNCE_HOURS


def recipient(name: str, receipts: Any, links: Links, message_id: str
              ) -> RecipientStatus:
    """One recipient on a peer: its ladder, from the receipts that came back
    (``receipts``: :class:`.overview.Receipts`, which imports this module)."""
    node = split(name)[1] or ""
    mine = receipts.peer.get(name, {})
    read, done = receipts.times.get(("read", name)), receipts.times.get(("done", name))
    state: State | None = "done" if done else "read" if read else None
    if mine.get("event") == "bounced":
        return RecipientStatus(name, state, rung="bounced",
                               waiting=f"sent back: {mine.get('reason')}")
    if links.queued(node, message_id):
        return RecipientStatus(name, None, rung="queued", waiting=links.why(node))
    replied = receipts.replied.get(name)
    surfaced = receipts.surfaced.get(name)
    rung = "replied" if replied else state or ("surfaced" if surfaced else "stored")
    waiting = None
    if rung == "stored":
        waiting = f"stored at {node}; no model there was shown it yet"
    return RecipientStatus(name, state or "unread", read_at=read, done_at=done, rung=rung,
                           surfaced=surfaced, wake=receipts.wakes.get(name),
                           replied_at=replied, waiting=waiting)


def agents(store: Store, config: Config, now: datetime) -> list[AgentInfo]:
    """The agents of every peer, from their rosters, each stale (with since when) while
    its link is down."""
    try:
        state = PeerState(store)
        known = state.items("known")
    except MailslotError:
        return []
    found = []
    for (node,), record in sorted(known.items()):
        if not isinstance(record, dict) or record.get("removed"):
            continue
        link = state.get("links", (node,))
        stale = link.get("since") if isinstance(link, dict) and not link.get("up") else None
        for agent in record.get("roster") or []:
            if isinstance(agent, str) and is_valid_name(agent):
                found.append(AgentInfo(f"{agent}@{node}", 0, [f"peer {node}"], node=node,
                                       address=f"{agent}@{node}", stale_since=stale,
                                       last_seen=record.get("roster_at")))
    return found
