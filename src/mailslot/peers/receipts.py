"""Receipts that go back: what became of a peer's mail here, for its sender's ``status``.

Whatever moves mail along the ladder here writes a line in the events log (read, done,
surfaced, a wake). For each peer this node keeps how far it read that log (the newest line
it has looked at, by a digest of the line); :func:`collect` reads the log newest first
down to it and queues, for every line about mail from that peer, a receipt in the
peer's outbox. A receipt's outbox key and envelope id are digests of its line, so
reading a line twice (two processes at once, how far it read lost to a crash) queues it once,
and a receipt sent twice is taken once.

What a receipt carries is what ``status`` shows the sender of a local message: the
event, the message, the agent, the time, and for a showing how it was shown, for a wake
its method and outcome; never a session id, a process, a folder or a machine.
"""

from __future__ import annotations

import hashlib
import json

from ..core.addresses import split
from ..core.errors import MailslotError
from ..core.ids import is_id, sender_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..store import Store
    from .state import PeerState

FORWARDED = ("read", "done", "surfaced", "wake_queued", "wake_skipped", "wake_attempt",
             "wake_ok", "wake_failed")
"""The events log lines that go back to the sender's node."""
_KEPT = ("how", "host", "method", "final", "reason")
_MOST = 20_000
"""The most lines one look reads (that mark lost: older receipts are not sent)."""


def _digest(event: dict[str, Any]) -> str:
    line = json.dumps(event, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(line.encode("utf-8", "surrogatepass")).hexdigest()


def start(store: Store, state: PeerState, node: str) -> None:
    """Set ``node``'s progress at the log's end, if it has none (a new peer: nothing of
    its mail is in the log yet)."""
    if state.get("progress", (node,)) is None:
        newest = next(store.events(newest_first=True), None)
        state.put("progress", (node,), {"mark": _digest(newest) if newest else None})


def collect(store: Store, state: PeerState, node: str) -> int:
    """Queue receipts for ``node`` from the log lines written since the last look;
    return how many were queued."""
    progress = state.get("progress", (node,))
    mark = progress.get("mark") if isinstance(progress, dict) else None
    fresh: list[dict[str, Any]] = []
    newest: str | None = None
    try:
        for event in store.events(newest_first=True):
            digest = _digest(event)
            if newest is None:
                newest = digest
            if digest == mark or len(fresh) >= _MOST:
                break
            fresh.append(event)
    except MailslotError:
        return 0
    if newest is None or newest == mark:
        return 0
    queued = 0
    for event in reversed(fresh):
        for receipt in _receipts(event, node):
            queued += _queue(state, node, receipt)
    state.put("progress", (node,), {"mark": newest})
    return queued


def _receipts(event: dict[str, Any], node: str) -> list[dict[str, Any]]:
    """The receipts one log line makes for ``node``: one per id of its mail the line names."""
    kind = event.get("event")
    if kind not in FORWARDED:
        return []
    ids = event.get("ids") if kind == "surfaced" else [event.get("id")]
    agent = event.get("agent")
    if not isinstance(ids, list) or not isinstance(agent, str) or "@" in agent:
        return []
    found = []
    for message_id in ids:
        if isinstance(message_id, str) and is_id(message_id) \
                and split(sender_of(message_id))[1] == node:
            receipt = {"event": kind, "id": message_id, "agent": agent,
                       "ts": event.get("ts")}
            receipt.update({k: event[k] for k in _KEPT if k in event})
            found.append(receipt)
    return found


def _queue(state: PeerState, node: str, receipt: dict[str, Any]) -> int:
    from ..core.dates import datetime
    from .envelope import sealed_at

    digest = _digest(receipt)
    try:
        when = datetime.fromisoformat(str(receipt.get("ts"))).timestamp()
    except ValueError:
        return 0
    eid = f"{int(when * 1000):012x}{digest[:20]}"
    item = {"kind": "receipt", "queued": when, "eid": eid, "at": sealed_at(when),
            "to": node, "event": receipt}
    return int(state.add("outbox", (node, "r-" + digest[:40]), item))
