"""The delivery ladder's receipts: when a model was shown a message, and the one notice
a sender asked for (``send --notify-when``).

Per message and recipient the ladder is stored → wake attempted → **surfaced** → seen →
read → done → replied. Every rung but surfaced already has its receipt (``delivered``,
the wake lines, ``seen`` and ``missed`` from :mod:`mailslot.service.seen`, ``read``,
``done``, ``replied``); this module adds ``surfaced``: one line of the
events log per showing, ``{"event": "surfaced", "ids": [...], "agent", "host",
"session", "how"}``, where ``how`` is one of :data:`HOWS`. It is written only after the
host took what carried the messages (a hook's output written and flushed into the
host's pipe, a tool result written to the MCP wire, a wake notice written where the
host shows it), never before: a record lost to a crash reads as "not surfaced", the
safe side. It is not synced: a receipt, not the truth (the folders are).

On the hook path, so it loads nothing heavy; the notice's modules load only when a
message asked for one. :mod:`~mailslot.service.overview` reads the ladder back.
"""

from __future__ import annotations

import time

from ..core.errors import MailslotError
from ..core.message import NOTIFY_RUNGS
from ..core.names import SYSTEM_SENDER

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..core.message import Message
    from ..store.base import Store

RUNGS = ("stored", "surfaced", "seen", "read", "done", "replied")
"""The ladder's rungs in order (a wake attempt is beside them: it moves nothing)."""
HOWS = ("start", "prompt", "midturn", "stop", "tool", "notice")
"""How a message was surfaced: a hook at session start, prompt, mid-turn or stop; a tool
result (``read_messages``); a wake notice the host showed the model."""


def passed(reached: str, rung: str) -> bool:
    """Is ``reached`` at ``rung`` of the ladder or beyond it?"""
    return RUNGS.index(reached) >= RUNGS.index(rung)


def event_time() -> str:
    """Now, in UTC with its offset (``2026-12-06T01:09:15.259000+00:00``), as the
    store's own receipts are: made with :mod:`time` alone, since finding the local
    zone (``astimezone()``) cost a hook that writes one receipt a fifth of what the
    seen rung's look costs in all."""
    now = time.time()
    return (time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now))
            + f".{int(now % 1 * 1_000_000):06d}+00:00")


def record_surfaced(store: Store, agent: str, messages: Sequence[Message], *, host: str,
                    session: str | None, how: str, mark: str = "",
                    again: Sequence[str] = ()) -> None:
    """Receipts that ``messages`` were shown to a model of ``agent``; call only after
    the host took them. Then the notices their senders asked for at ``surfaced``.
    ``mark``: the showing's fingerprint (:mod:`mailslot.service.seen`); ``again``: the
    ids among them shown again because the host's record showed them never given.
    Best effort: a log that cannot be written must not fail what was shown."""
    if not messages:
        return
    record: dict[str, object] = {"ts": event_time(), "event": "surfaced",
                                 "ids": [m.id for m in messages], "agent": agent,
                                 "host": host, "session": session, "how": how}
    if mark:
        record["mark"] = mark
    if again:
        record["again"] = list(again)
    try:
        store.append_event(record)
    except MailslotError:
        return
    for message in messages:
        reached(store, message, agent, "surfaced")


def reached(store: Store, message: Message, agent: str, rung: str) -> None:
    """``agent`` reached ``rung`` (or beyond) with ``message``: if the sender asked to be
    told at a rung it passed, tell it once (the first recipient to get there sends it).

    The key is marked before the notice is written: racing recipients send one notice,
    and a crash between the two loses that notice, never the message (the ladder in
    ``status`` still says it).
    """
    asked = message.notify_when
    if asked is None or asked not in NOTIFY_RUNGS or rung not in NOTIFY_RUNGS:
        return
    if NOTIFY_RUNGS.index(rung) < NOTIFY_RUNGS.index(asked):
        return
    sender = message.sender
    if sender in (SYSTEM_SENDER, agent) or message.is_broadcast:
        return
    try:
        if not store.mark_once(f"notify-{asked}-{message.id}"):
            return
        from ..mail.posting import Notifier  # only when a sender asked for a notice

        Notifier(store).tell(sender, f"{asked}: your message to {agent}",
                             notice_body(message.id, agent, asked, rung))
    except MailslotError:
        return  # the sender's notice, never the recipient's failure


def notice_body(message_id: str, agent: str, asked: str, rung: str) -> str:
    """What the sender is told: ids, names and rungs only, none of the message's text."""
    got = "" if rung == asked else f" (it is already {rung})"
    return (f"Your message {message_id} reached '{asked}' with {agent}{got}, the first of "
            f"its recipients to get there.\n\n`mailslot status {message_id}` shows its "
            "whole delivery ladder.\n")
