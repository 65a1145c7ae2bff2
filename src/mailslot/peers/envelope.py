"""Envelopes: what crosses between nodes, each signed by the node that sends it.

An envelope is one JSON object::

    {"v": 1, "kind": "mail", "from": "b", "to": "a",
     "eid": "0193a8f2c4e17f3a9c2e5b6d7e8f9a0b", "at": "2026-12-06T10:00:00.123456+00:00",
     "message": "---\\nid: 2026-12-06_100000.123456_ana_to_bob@a_7f3a9c2e\\n...",
     "sig": "<base64 Ed25519 signature>"}

``kind`` is ``mail`` (``message``: the message file exactly as the sending node stores
it, names written as that node writes them) or ``receipt`` (``event``: one line of the
sending node's events log about mail it received from the other node: read, done,
surfaced, a wake, a bounce). ``from`` and ``to`` are node names, ``eid`` a fresh id
(its first 12 digits the time in milliseconds, so a receiver forgets old ones in order),
``at`` when the sending node sealed it. ``sig`` signs the canonical JSON of every other
field (keys sorted, no spaces, UTF-8): :func:`canonical`.

A receiver :func:`opens <open_envelope>` one only when the signature verifies with the
key it pinned for ``from``, ``to`` is itself, ``at`` lies within the acceptance window
(not older than it, not more than a day ahead) and the shape is whole; the rules that
follow (which agents of ``from`` may speak, to whom) are the service's. Replays are
refused by the envelope ids a node keeps for the window (:mod:`.state`, ``received``).
"""

from __future__ import annotations

import base64
import json
import os
import time

from ..core.dates import UTC, datetime
from ..core.errors import Refused
from ..store.namespaces import is_envelope_id as is_eid

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .nodes import NodeKey

VERSION = 1
KINDS = ("mail", "receipt")
AHEAD_SECONDS = 86_400.0
"""How far ahead of the receiver's clock an envelope's ``at`` may be (clocks drift)."""


class Rejected(Refused):
    """An envelope that is not taken: unsigned, tampered, replayed, stale, misaddressed."""


def new_eid(now: float | None = None) -> str:
    """A fresh envelope id: the time in milliseconds (12 hex digits), then 80 random bits."""
    stamp = int((time.time() if now is None else now) * 1000)
    return f"{stamp:012x}{os.urandom(10).hex()}"


def eid_time(eid: str) -> float:
    """When an envelope id was made (its first 12 digits), as a Unix time."""
    return int(eid[:12], 16) / 1000


def canonical(fields: dict[str, Any]) -> bytes:
    """The bytes a signature covers: every field but ``sig``, keys sorted, compact."""
    return json.dumps({k: v for k, v in fields.items() if k != "sig"}, sort_keys=True,
                      separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def seal(fields: dict[str, Any], key: NodeKey) -> dict[str, Any]:
    """``fields`` with ``v`` and its signature added."""
    body = {**fields, "v": VERSION}
    return {**body, "sig": base64.b64encode(key.sign(canonical(body))).decode("ascii")}


def open_envelope(envelope: object, *, pinned: bytes, sender: str, me: str, now: float,
                  window: float) -> dict[str, Any]:
    """The envelope, if it is whole, signed by ``sender``'s pinned key, for ``me`` and
    within the window; else :class:`Rejected` saying why."""
    if not isinstance(envelope, dict):
        raise Rejected("not an envelope (a JSON object)")
    _verify(envelope, pinned, sender)
    if envelope.get("v") != VERSION:
        raise Rejected(f"envelope version {envelope.get('v')!r} is not {VERSION}")
    if envelope.get("to") != me:
        raise Rejected(f"addressed to node {envelope.get('to')!r}, not {me}")
    eid = envelope.get("eid")
    if not isinstance(eid, str) or not is_eid(eid):
        raise Rejected("no envelope id")
    kind = envelope.get("kind")
    if kind not in KINDS:
        raise Rejected(f"unknown kind {kind!r}")
    field = "message" if kind == "mail" else "event"
    if not isinstance(envelope.get(field), str if kind == "mail" else dict):
        raise Rejected(f"a {kind} envelope without its {field}")
    at = _time(envelope.get("at"))
    if at < now - window:
        raise Rejected(f"sealed at {envelope.get('at')}, older than the {window / 3600:g} h "
                       "a node takes envelopes for (a replay, or held back too long)")
    if at > now + AHEAD_SECONDS:
        raise Rejected(f"sealed at {envelope.get('at')}, ahead of this node's clock")
    return envelope


def _verify(envelope: dict[str, Any], pinned: bytes, sender: str) -> None:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    if envelope.get("from") != sender:
        raise Rejected(f"sent over {sender}'s link but signed as from "
                       f"{envelope.get('from')!r}")
    raw = envelope.get("sig")
    if not isinstance(raw, str):
        raise Rejected("unsigned")
    try:
        signature = base64.b64decode(raw, validate=True)
        Ed25519PublicKey.from_public_bytes(pinned).verify(signature, canonical(envelope))
    except (ValueError, InvalidSignature):
        raise Rejected(f"its signature does not verify with {sender}'s pinned key "
                       "(tampered, or forged)") from None


def _time(raw: object) -> float:
    if not isinstance(raw, str):
        raise Rejected("no time it was sealed at")
    try:
        when = datetime.fromisoformat(raw)
    except ValueError:
        raise Rejected(f"an unreadable time {raw[:40]!r}") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


def sealed_at(now: float) -> str:
    return datetime.fromtimestamp(now, UTC).isoformat()
