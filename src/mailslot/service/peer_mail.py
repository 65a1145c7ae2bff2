"""Taking what a peer node sends: each envelope verified, then the rules of a local
send applied to its sender, then stored, or refused with the reason.

The receiving side's rules, in one place (both ends of a link use them: ``peer serve``
for what a client pushes, the client for what it pulls):

* the envelope opens only with the key pinned for the node it came over
  (:func:`mailslot.peers.envelope.open_envelope`), for this node, within the window, and
  its id not taken before (a replay: nothing stored, logged);
* **mail** speaks only for an agent of the sending node (its ``from`` a bare name, the
  id's sender the same): ``ana`` of node ``b`` becomes ``ana@b`` here, and ``b`` can
  never speak as this node's agents or a third node's. Each recipient here must be one
  the owner lets that node send to (config.json ``peers.b.may_send_to``), pass its gate
  (a remote sender is no member), and the loop governor must let ``ana@b`` through,
  as for a local sender; then the message is delivered (a duplicate id is a duplicate,
  never a second copy), its receipts written and its wakes queued;
* a **receipt** is about mail this node sent to that node's agent, and only that:
  it becomes a line of this node's events log (``status`` reads it), and the notice a
  sender asked for (``--notify-when``) once its rung is reached.

Every refusal is one line in the events log (``peer_refused``) and in the answer.
"""

from __future__ import annotations

import time
from contextlib import suppress

from ..access import gates
from ..access.authority import Principal
from ..core.addresses import id_seen_from, seen_from, split
from ..core.errors import IdTaken, InvalidInput, MailslotError, Refused
from ..core.ids import is_id, sender_of
from ..core.message import from_bytes
from ..core.names import is_valid_name
from ..mail import governor
from ..mail.posting import receipt
from ..peers import peer_config as settings
from ..peers.envelope import Rejected, open_envelope
from ..peers.nodes import decode
from ..peers.receipts import FORWARDED

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..core.message import Message
    from ..peers.state import PeerState
    from .sending import Sending

    Result = dict[str, Any]


class Taking:
    """What one node sends here, taken envelope by envelope."""

    def __init__(self, box: Sending, state: PeerState, here: str, node: str) -> None:
        self.box, self.state, self.here, self.node = box, state, here, node

    def __call__(self, envelopes: list[Any]) -> list[Result]:
        record = self.state.get("known", (self.node,))
        try:
            pinned = decode(record.get("key")) if isinstance(record, dict) \
                and not record.get("removed") else None
        except InvalidInput:
            pinned = None  # an unreadable pin trusts nothing
        window = settings.window_seconds(self.box.config.raw)
        return [self._checked(envelope, pinned, window) for envelope in envelopes]

    def _checked(self, envelope: Any, pinned: bytes | None, window: float) -> Result:
        """:meth:`_one`; this node's store failing is an ``error`` (sent again later)."""
        try:
            return self._one(envelope, pinned, window)
        except MailslotError as exc:
            eid = envelope.get("eid") if isinstance(envelope, dict) else None
            return {"eid": eid, "outcome": "error", "reason": str(exc)}

    def _one(self, envelope: Any, pinned: bytes | None, window: float) -> Result:
        eid = envelope.get("eid") if isinstance(envelope, dict) else None
        try:
            if pinned is None:
                raise Rejected(f"{self.node} is no peer of {self.here} now")
            opened = open_envelope(envelope, pinned=pinned, sender=self.node, me=self.here,
                                   now=time.time(), window=window)
        except Rejected as exc:
            return self._refused(eid, str(exc))
        if self.state.get("received", (self.node, opened["eid"])) is not None:
            self._log("peer_replay", opened["eid"], "taken before (a retry, or a replay): "
                                                   "nothing stored again")
            return {"eid": opened["eid"], "outcome": "duplicate"}
        try:
            result = self._mail(opened) if opened["kind"] == "mail" else self._receipt(opened)
        except Refused as exc:
            result = self._refused(opened["eid"], str(exc))
        except MailslotError as exc:  # this node's store failed: sent again later
            return {"eid": opened["eid"], "outcome": "error", "reason": str(exc)}
        if result["outcome"] != "refused" or "refused" in result:
            self.state.add("received", (self.node, opened["eid"]), {"at": time.time()})
        return result

    def _refused(self, eid: object, why: str) -> Result:
        self._log("peer_refused", eid, why)
        return {"eid": eid if isinstance(eid, str) else None, "outcome": "refused",
                "reason": why}

    def _log(self, kind: str, eid: object, why: str) -> None:
        receipt(self.box.store, self.box._clock, kind, str(eid)[:64], node=self.node,
                reason=why)

    # Mail ------------------------------------------------------------------------------
    def _mail(self, envelope: dict[str, Any]) -> Result:
        message = self._translated(envelope["message"])
        mine = [name for name in message.to if "@" not in name]
        if not mine:
            raise Refused(f"it names no agent of {self.here}")
        refused = self._refusals(message.sender, mine)
        taking = [name for name in mine if name not in refused]
        if not taking:
            return {"eid": envelope["eid"], "outcome": "refused",
                    "reason": "; ".join(sorted(set(refused.values()))), "refused": refused}
        config = self.box.config
        governor.check_send(self.box.store, config, message.sender, taking,
                            self.box._clock().timestamp(),
                            size=governor.context_bytes(message.subject, message.body))
        try:
            self.box.store.deliver(message, taking)
        except IdTaken:
            return {"eid": envelope["eid"], "outcome": "duplicate"}
        clock = self.box._clock
        receipt(self.box.store, clock, "delivered", message.id, agent=message.sender,
                to=list(message.to), via=self.node)
        if message.in_reply_to is not None:
            receipt(self.box.store, clock, "replied", message.id,
                    in_reply_to=message.in_reply_to)
        self.box._after_delivery(message)
        return {"eid": envelope["eid"], "outcome": "stored", "refused": refused}

    def _translated(self, text: Any) -> Message:
        """The message as this node writes it: ``ana`` of the sending node becomes
        ``ana@NODE``, this node's agents lose their ``@HERE``."""
        try:
            message = from_bytes(str(text).encode("utf-8"), name=f"mail from {self.node}")
        except MailslotError as exc:
            raise Refused(f"unreadable: {exc}") from None
        sender = message.sender
        if not is_id(message.id) or sender_of(message.id) != sender \
                or not is_valid_name(sender) or message.is_broadcast:
            raise Refused(f"{self.node} may speak only for its own agents, one message at a "
                          f"time (from {sender!r})")

        def seen(name: str) -> str:
            return seen_from(name, self.node, self.here)

        def seen_id(value: str | None) -> str | None:
            return id_seen_from(value, self.node, self.here) if value and is_id(value) \
                else None

        return message.replace(id=id_seen_from(message.id, self.node, self.here),
                               sender=seen(sender), to=tuple(seen(t) for t in message.to),
                               in_reply_to=seen_id(message.in_reply_to),
                               thread=seen_id(message.thread), instance=None)

    def _refusals(self, sender: str, names: list[str]) -> dict[str, str]:
        """Why each of ``names`` may not take mail from ``sender`` (an agent of a peer)."""
        box = self.box
        allowed = settings.may_send_to(box.config.raw, self.node)
        principal = Principal(sender, credentialed=True)  # the node's key is its proof
        found = {}
        for name in names:
            if allowed is not None and name not in allowed:
                found[name] = (f"{self.here}'s owner lets {self.node} send to "
                               f"{', '.join(sorted(allowed)) or 'no agent'} only")
            elif not gates.passes(box.store, box.config, principal, name):
                found[name] = f"{name} accepts mail only from admitted members"
        return found

    # Receipts --------------------------------------------------------------------------
    def _receipt(self, envelope: dict[str, Any]) -> Result:
        event = envelope["event"]
        kind, agent, theirs = event.get("event"), event.get("agent"), event.get("id")
        if kind not in FORWARDED or not isinstance(agent, str) or not is_valid_name(agent) \
                or not isinstance(theirs, str) or not is_id(theirs):
            raise Refused("not a receipt this node takes")
        message_id = id_seen_from(theirs, self.node, self.here)
        address = f"{agent}@{self.node}"
        message = self._sent(message_id, address)
        line: dict[str, Any] = {"ts": str(event.get("ts")), "event": kind, "agent": address,
                                "via": "peer"}
        if kind == "surfaced":
            line["ids"] = [message_id]
        else:
            line["id"] = message_id
        line.update({k: event[k] for k in ("how", "host", "method", "final", "reason")
                     if isinstance(event.get(k), (str, bool))})
        with suppress(MailslotError):  # a receipt: best effort, as every receipt
            self.box.store.append_event(line)
        if kind in ("surfaced", "read", "done"):
            from .ladder import reached

            reached(self.box.store, message, address, str(kind))
        return {"eid": envelope["eid"], "outcome": "stored"}

    def _sent(self, message_id: str, address: str) -> Message:
        """The sender's copy of ``message_id``, if it went to ``address``: a node speaks
        only of mail it was sent."""
        sender, node = split(sender_of(message_id))
        record = self.state.get("sent", (sender, message_id)) if node is None \
            and is_valid_name(sender) else None
        try:
            message = from_bytes(str(record["message"]).encode(), name=message_id,
                                 header_only=True) if isinstance(record, dict) else None
        except (MailslotError, KeyError):
            message = None
        if message is None or address not in message.to:
            raise Refused(f"a receipt about {message_id}, which this node never sent to "
                          f"{address}")
        return message
