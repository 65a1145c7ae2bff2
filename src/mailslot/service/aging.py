"""Unread mail that ages past a limit: the owner is told, once per message.

``config.json`` ``alerts.unread_after_minutes`` (a number above 0; absent: no alerts).
The watcher looks at most every :data:`EVERY` seconds while it runs, and a config asking
for alerts makes a watcher wanted (``mailslot watch``, or one started on demand, which
stays up while unread mail may still come of age). Each look reads every agent's kept
unread count and its oldest unread ids (at most :data:`LOOKED` each; no folder listing
of history), and sends the owner one notice from ``mailslot`` naming the agents, how
many of their messages aged past the limit and the oldest one's id and date; a message
is named once ever (the store's ``mark_once``: ``aged-<id>``). Ids, names and times
only: never a subject or a body. The owner's own mail is left out, and so is mail from
``mailslot``; without an owner in the config nobody is told.
"""

from __future__ import annotations

from ..core.config import Config
from ..core.dates import UTC, datetime
from ..core.errors import MailslotError
from ..core.ids import sender_of
from ..core.names import SYSTEM_SENDER
from ..mail.posting import Notifier

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..store import Store

LOOKED = 200
"""The oldest unread messages of each agent a look considers."""
EVERY = 60.0
"""Seconds between two looks of a running watcher."""


def _born(message_id: str) -> float | None:
    """The time an id carries (ids start with their UTC time)."""
    try:
        when = datetime.strptime(message_id[:24], "%Y-%m-%d_%H%M%S.%f")
    except ValueError:
        return None
    return when.replace(tzinfo=UTC).timestamp()


def look(store: Store, now: float) -> float | None:
    """Tell the owner of unread mail that aged past the limit since the last look; the
    time the next message comes of age (``None``: none waits, or no alerts are asked
    for). Best effort: a look that cannot read the store tries again at the next."""
    try:
        config = Config(store.load_config())
        limit, owner = config.unread_alert(), config.owner
    except MailslotError:
        return None
    if limit is None or owner is None:
        return None
    aged: dict[str, list[str]] = {}
    due: float | None = None
    for agent in store.agent_names():
        if agent == owner:
            continue
        _, oldest = store.count_unread(agent, LOOKED)
        for message_id in oldest:
            born = _born(message_id)
            if born is None or sender_of(message_id) == SYSTEM_SENDER:
                continue
            if born + limit > now:
                due = born + limit if due is None else min(due, born + limit)
                break  # sorted: the rest are younger still
            if store.mark_once(f"aged-{message_id}"):
                aged.setdefault(agent, []).append(message_id)
    if aged:
        Notifier(store).tell(owner, f"unread mail older than {limit / 60:g} minutes",
                             _body(aged, limit))
    return due


def _body(aged: dict[str, list[str]], limit: float) -> str:
    lines = [f"These agents have unread mail older than {limit / 60:g} minutes "
             "(config.json alerts.unread_after_minutes):", ""]
    for agent, ids in sorted(aged.items()):
        lines.append(f"- {agent}: {len(ids)}, the oldest {ids[0]}")
    lines += ["", "`mailslot status ID` says why a message waits; `mailslot who` lists "
              "every agent. Each message is named once."]
    return "\n".join(lines) + "\n"
