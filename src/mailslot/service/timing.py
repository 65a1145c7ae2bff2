"""How long mail takes from one rung of the delivery ladder to the next: each
recipient's times in ``status`` (seconds from stored to every rung it reached), and
``mailslot stats``: per agent and host, the p50 and p99 of each step.

A step is measured from the rung before it that the message reached by then: ``woken``
from ``stored``; ``surfaced`` from ``woken`` (or ``stored`` when no wake was needed);
``seen`` from ``surfaced``; ``read`` from ``seen`` (or ``surfaced``, or ``stored``: mail
read with the CLI was never shown by a hook); ``replied`` from ``read``. Everything is
read from the events log (docs/format.md), newest line first, back to a little before
``--since``: what was delivered earlier is left out, and the log's older history is
never read.
"""

from __future__ import annotations

from ..core.dates import aware, datetime
from ..core.ids import sender_of
from ..core.values import replace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from ..core.message import Message
    from ..core.results import RecipientStatus
    from ..store.base import Store

STEPS = ("woken", "surfaced", "seen", "read", "replied")
"""The rungs a step leads to, in ladder order (``stored`` is where every one starts)."""
_RACING_LINES = 1000
"""Lines read past the first one older than ``--since`` (receipts race a little)."""


def timed(message: Message, recipients: list[RecipientStatus]) -> list[RecipientStatus]:
    """Each recipient with ``timing``: seconds from stored to every rung it reached."""
    stored = aware(message.date)
    if stored is None:
        return recipients
    out = []
    for r in recipients:
        times = {"woken": r.woken_at, "surfaced": (r.surfaced or {}).get("at"),
                 "seen": (r.seen or {}).get("at"), "read": r.read_at, "done": r.done_at,
                 "replied": r.replied_at}
        timing = {rung: round((when - stored).total_seconds(), 3)
                  for rung, raw in times.items() if (when := aware(raw)) is not None}
        out.append(replace(r, timing=timing))
    return out


class _Track:
    """One message's rungs with one recipient."""

    __slots__ = ("host", "times")

    def __init__(self, stored: datetime) -> None:
        self.times: dict[str, datetime] = {"stored": stored}
        self.host = "-"

    def reach(self, rung: str, when: datetime | None, host: object = None) -> None:
        """``rung`` at ``when``; the earliest time wins (lines come newest first)."""
        if when is None:
            return
        before = self.times.get(rung)
        if before is None or when <= before:
            self.times[rung] = when
            if rung == "surfaced" and isinstance(host, str):
                self.host = host

    def steps(self) -> Iterable[tuple[str, float]]:
        """Each step it made and its seconds, from the rung before it reached by then."""
        for rung in STEPS:
            when = self.times.get(rung)
            if when is None:
                continue
            order = ("stored", *STEPS)
            earlier = [t for r in order[:order.index(rung)]
                       if (t := self.times.get(r)) is not None and t <= when]
            yield rung, (when - max(earlier)).total_seconds()


DEFAULT_SINCE = "7d"
_UNITS = {"m": 60, "h": 3600, "d": 86400}


def since(text: str | None, now: datetime) -> datetime:
    """Where ``--since`` starts: a date or time (local when it names no offset), or a
    while before ``now`` (``30m``, ``2h``, ``7d``); ``InvalidInput`` for anything else."""
    from ..core.dates import span, timedelta
    from ..core.errors import InvalidInput

    text = (text or DEFAULT_SINCE).strip()
    ago = span(text, _UNITS)
    if ago is not None:
        return now - timedelta(seconds=ago)
    try:
        found = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidInput(f"--since must be a date or time like 2026-12-01 or "
                           f"2026-12-01T14:30, or a while ago like 30m, 2h or 7d (got "
                           f"{text!r})") from None
    return found if found.tzinfo is not None else found.astimezone()


def _tracks(store: Store, since: datetime, agent: str | None, viewer: str | None
            ) -> dict[tuple[str, str], _Track]:
    """Every (message, recipient) delivered since ``since`` that ``viewer`` may see the
    ladder of (its sender or that recipient; ``None``: the owner, every one)."""
    lines: list[dict[str, Any]] = []
    left: int | None = None
    for event in store.events(newest_first=True):
        lines.append(event)
        when = aware(event.get("ts"))
        if left is None and when is not None and when < since:
            left = _RACING_LINES
        if left is not None:
            left -= 1
            if left < 0:
                break
    tracks: dict[tuple[str, str], _Track] = {}
    for event in reversed(lines):  # oldest first: a message is delivered before the rest
        _follow(event, tracks, since, agent, viewer)
    return tracks


def _follow(event: dict[str, Any], tracks: dict[tuple[str, str], _Track],
            since: datetime, agent: str | None, viewer: str | None) -> None:
    kind, when = event.get("event"), aware(event.get("ts"))
    if kind == "delivered" and when is not None and when >= since:
        to = event.get("to")
        for name in to if isinstance(to, list) else ():
            if isinstance(name, str) and (agent is None or name == agent) and (
                    viewer is None or viewer in (name, event.get("agent"))):
                tracks[(str(event.get("id")), name)] = _Track(when)
        return
    who = str(event.get("agent"))
    rung = {"wake_ok": "woken", "surfaced": "surfaced", "seen": "seen", "read": "read"
            }.get(str(kind))
    if rung is not None:
        ids = event.get("ids") if kind in ("surfaced", "seen") else [event.get("id")]
        for message_id in ids if isinstance(ids, list) else ():
            track = tracks.get((str(message_id), who))
            if track is not None:
                track.reach(rung, when, event.get("host"))
    elif kind == "replied":
        track = tracks.get((str(event.get("in_reply_to")), sender_of(str(event.get("id")))))
        if track is not None:
            track.reach("replied", when)


def _percentile(samples: list[float], pct: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))]


def stats(store: Store, since: datetime, agent: str | None = None, *,
          viewer: str | None = None) -> list[dict[str, Any]]:
    """Per agent and host (the host of the first showing; ``-``: never shown), each
    step's count, p50 and p99 in seconds, for mail delivered since ``since`` that
    ``viewer`` may see the ladder of."""
    groups: dict[tuple[str, str, str], list[float]] = {}
    for (_, name), track in _tracks(store, since, agent, viewer).items():
        for rung, seconds in track.steps():
            groups.setdefault((name, track.host, rung), []).append(seconds)
    order = {rung: i for i, rung in enumerate(STEPS)}
    return [{"agent": name, "host": host, "step": rung, "count": len(samples),
             "p50_seconds": round(_percentile(samples, 50), 3),
             "p99_seconds": round(_percentile(samples, 99), 3)}
            for (name, host, rung), samples in sorted(
                groups.items(), key=lambda g: (g[0][0], g[0][1], order[g[0][2]]))]
