"""Carrying over one live link: push what waits here, take what waits there, both ways.

A :class:`Carrier` holds one node's side of a link: the client's (``peer sync``, the
watcher) drives it with :meth:`Carrier.run`; the server's (``peer serve``) uses
:meth:`Carrier.outgoing` to answer pulls. What arrives is handed to ``take`` (the
service: verify, check, store) and answered per envelope; what leaves is settled by the
answers (:func:`.outbox.settle`). An envelope not answered (the link broke) stays in the
outbox and goes again; the receiver knows it again by its ids, so nothing is stored twice.
"""

from __future__ import annotations

import threading
import time

from . import outbox, receipts
from .frames import MAX_FRAME, WireError
from .protocol import BATCH, Session

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..store import Store
    from .nodes import NodeKey
    from .state import PeerState

    Take = Callable[[str, list[dict[str, Any]]], list[dict[str, Any]]]

LIVE_POLL_SECONDS = 0.02
"""How often a live link looks for new mail to push (one listing of the outbox)."""
PULL_WAIT_SECONDS = 1.0
"""How long one pull on a live link waits for the other side to have something."""
BATCH_BYTES = 8 << 20
"""The most message text one frame carries (a batch of big messages is cut short)."""
RECEIPT_SECONDS = 0.5
"""How often receipts are gathered from the events log while a link is live."""


class Outgoing:
    """One batch for a node: the sealed envelopes, and which outbox item each is."""

    def __init__(self, carrier: Carrier, most: int) -> None:
        self.carrier = carrier
        self.items: dict[str, tuple[str, dict[str, Any]]] = {}
        self.envelopes: list[dict[str, Any]] = []
        size = 0
        for item_key, item in outbox.waiting(carrier.state, carrier.node, most):
            eid, weight = item.get("eid"), len(str(item.get("message", ""))) + 1024
            if not isinstance(eid, str) or weight * 2 > MAX_FRAME:  # (JSON may double it)
                outbox.settle(carrier.store, carrier.state, carrier.node, item_key, item,
                              {"outcome": "refused", "reason": "too large to carry to a "
                               f"peer (over {MAX_FRAME // 2 >> 20} MiB)"})
                continue
            if self.envelopes and size + weight > BATCH_BYTES:
                break  # the rest go in the next frame
            size += weight
            self.items[eid] = (item_key, item)
            self.envelopes.append(outbox.sealed(item, carrier.key, carrier.here))

    def settle(self, results: list[dict[str, Any]]) -> int:
        """Act on the answers; return how many items they settled."""
        settled = 0
        for result in results:
            if result.get("outcome") not in ("stored", "duplicate", "refused"):
                continue  # the other node's store failed: it stays queued
            found = self.items.pop(str(result.get("eid")), None)
            if found is not None:
                outbox.settle(self.carrier.store, self.carrier.state, self.carrier.node,
                              found[0], found[1], result)
                settled += 1
        return settled


class Carrier:
    """This node's side of a link to ``node``."""

    def __init__(self, store: Store, state: PeerState, here: str, key: NodeKey,
                 node: str, take: Take) -> None:
        self.store, self.state, self.here, self.key = store, state, here, key
        self.node, self._take = node, take
        self._receipts_due = 0.0

    def gather(self) -> None:
        """Receipts for ``node`` from the events log, at most every few tenths of a second."""
        now = time.monotonic()
        if now >= self._receipts_due:
            self._receipts_due = now + RECEIPT_SECONDS
            receipts.collect(self.store, self.state, self.node)

    def outgoing(self, most: int = BATCH) -> Outgoing:
        self.gather()
        return Outgoing(self, most)

    def take(self, envelopes: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return self._take(self.node, envelopes) if envelopes else []

    def pending(self) -> bool:
        """Does anything wait here for ``node``? (one listing)"""
        return bool(self.state.keys("outbox", (self.node,))[:1])

    def push_all(self, session: Session) -> int:
        moved = 0
        while True:
            batch = self.outgoing()
            if not batch.envelopes:
                return moved
            moved += _settled(batch, session.push(batch.envelopes), self.node)

    def run(self, session: Session, *, linger: float = 0.0,
            stop: threading.Event | None = None) -> int:
        """Push and pull until nothing is left; then, for ``linger`` seconds since the
        last thing moved, keep the link live (long pulls, pushing as mail is queued).
        Returns how many envelopes moved either way."""
        moved, last = 0, time.monotonic()
        while stop is None or not stop.is_set():
            now_moved = self.push_all(session)
            now_moved += self._pull(session, PULL_WAIT_SECONDS if linger else 0.0)
            moved += now_moved
            if now_moved:
                last = time.monotonic()
            elif time.monotonic() - last >= linger:
                break
        return moved

    def _pull(self, session: Session, wait: float) -> int:
        """One pull; while it waits, mail queued here is pushed at once (the server ends
        the pull when the push arrives, and answers both in turn)."""
        session.start_pull(wait)
        pushed: Outgoing | None = None
        while not session.stream.readable(LIVE_POLL_SECONDS):
            if self.pending():
                self.gather()
                pushed = Outgoing(self, BATCH)
                if pushed.envelopes:
                    session.stream.send({"type": "push", "envelopes": pushed.envelopes})
                    break
                pushed = None
        envelopes = session.finish_pull()
        results = self.take(envelopes)
        session.ack(results)
        moved = len(envelopes)
        if pushed is not None:
            moved += _settled(pushed, session.expect_pushed(), self.node)
        failed = [r for r in results if r.get("outcome") == "error"]
        if failed:
            raise WireError(f"this node could not store what {self.node} sent: "
                            f"{failed[0].get('reason')}")
        return moved


def _settled(batch: Outgoing, results: list[dict[str, Any]], node: str) -> int:
    """Settle a pushed batch; a batch the other node could not take whole (its store
    failed) ends the link, to be tried again later (what was not settled stays queued)."""
    settled = batch.settle(results)
    if settled < len(batch.envelopes):
        said = [r.get("reason") for r in results if r.get("outcome") == "error"]
        raise WireError(f"{node} could not store everything: {said[0] if said else 'no answer'}")
    return settled
