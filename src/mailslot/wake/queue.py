"""What gets a wake queued at delivery, and the wake log: the queue's service-level rules.

After a directed message is delivered, :func:`enqueue_wakes` queues one wake per
recipient whose own config allows it (:mod:`.policy`). Nothing here runs a host: the
watcher does that, so ``send`` stays fast and never runs a program on the recipient's
behalf inside the sender's process. Not queued: broadcasts, mail to oneself, notices
from ``mailslot`` itself (so a failed wake can never set off another), and wakes the loop
governor stops (:mod:`mailslot.mail.governor`: over a limit, or the agent paused).

When a message asked for a wake (``send --wake``) that will not be tried, the sender is
told at once by a notice from ``mailslot``. Every decision and attempt is a line in
``log/events.jsonl``: ``wake_queued``, ``wake_skipped``, ``wake_attempt``, ``wake_ok``,
``wake_failed``; a line carries ids, names and our own reasons, never a subject, a body,
a host's output or a token.
"""

from __future__ import annotations

from ..core.config import Config
from ..core.dates import datetime
from ..core.errors import MailslotError
from ..core.ids import sender_of
from ..core.message import Message
from ..core.names import SYSTEM_SENDER, is_valid_name
from ..mail.governor import wake_refusal
from ..store import WakeEntry
from .claims import Queue
from .notice import not_woken_body
from .policy import refusal, settings_for

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..mail.posting import Notifier
    from ..store import Store


def log(store: Store, kind: str, message_id: str, agent: str, **extra: Any) -> None:
    """One wake line in the events log (best effort, like every receipt)."""
    record: dict[str, Any] = {"ts": datetime.now().astimezone().isoformat(), "event": kind,
                              "id": message_id, "agent": agent}
    record.update(extra)
    # Best effort: the queue folders hold the truth; a full disk must not stop a wake.
    try:
        store.append_event(record)
    except MailslotError:
        return


def tell_sender(notifier: Notifier, message_id: str, subject: str, body: str
                ) -> Message | None:
    """A notice from ``mailslot`` to the message's sender (never to mailslot itself)."""
    sender = sender_of(message_id)
    if sender == SYSTEM_SENDER or not is_valid_name(sender):
        return None
    return notifier.tell(sender, subject, body)


def enqueue_wakes(store: Store, message: Message, notifier: Notifier,
                  now: float | None = None, *, thread: str | None = None) -> None:
    """Queue the wakes ``message``'s recipients allow and the loop governor lets
    through (``now``: the sender's clock, else the store's; ``thread``: the
    conversation whose turns the governor counts). An ack wakes nobody. Never raises:
    it is delivered."""
    if message.is_broadcast or message.sender == SYSTEM_SENDER:
        return
    for agent in message.to:
        if agent == message.sender or "@" in agent:
            continue  # an agent of another node: its own node wakes it
        if message.ack:
            if message.delivery == "wake":
                log(store, "wake_skipped", message.id, agent, reason="an ack wakes nobody")
            continue
        try:
            _enqueue_one(store, message, agent, notifier,
                         store.clock() if now is None else now, thread)
        except MailslotError as exc:
            log(store, "wake_skipped", message.id, agent, reason=f"could not queue: {exc}")


def _enqueue_one(store: Store, message: Message, agent: str, notifier: Notifier,
                 now: float, thread: str | None) -> None:
    asked = message.delivery == "wake"
    try:
        config = Config(store.load_config())
        settings = settings_for(config, agent)
    except MailslotError as exc:
        reason = str(exc)  # fails closed: no wake, and the reason names the field
    else:
        refused = refusal(settings, message)
        if refused is None:  # allowed: the loop governor may still say not now
            refused = wake_refusal(store, config, message.sender, agent, now, thread)
        if refused is None:
            # Logged first: a watcher may take the wake the instant it is queued.
            log(store, "wake_queued", message.id, agent, method=settings.method)
            Queue(store).enqueue(WakeEntry(message.id, agent, not_before=store.clock()))
            return
        if not asked and settings.opt_in != "always":
            return  # nothing was asked and nothing allowed: not worth a line
        reason = refused
    log(store, "wake_skipped", message.id, agent, reason=reason)
    if asked:
        tell_sender(notifier, message.id, f"{agent} will not be woken",
                    not_woken_body(agent, message.id, reason))
