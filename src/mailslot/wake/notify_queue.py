"""What gets a notifier entry queued at delivery: light, on the send path.

The notifiers themselves, and the runner that works these queues, are in :mod:`.notify`
(loaded by the watcher only). One entry per notifier of each recipient of a directed
message, in that notifier's own queue (:func:`.claims.notifier_queue`); not queued:
broadcasts, mail to oneself and notices from ``mailslot`` itself, as for wakes.
"""

from __future__ import annotations

from ..core.config import Config
from ..core.errors import MailslotError, StoreError
from ..core.message import Message
from ..core.names import SYSTEM_SENDER
from ..store import WakeEntry
from ..store.namespaces import NOTIFY_QUEUES

TYPE_CHECKING = False  # typing is not loaded on the CLI path
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from ..store import Store

MAX_NOTIFIERS = NOTIFY_QUEUES
"""Notifiers per agent: each place in the list has a queue the watcher looks at."""
NOTIFIER_KINDS = ("command", "desktop", "bank")


def notifier_entries(config: Config, agent: str) -> list[Mapping[str, Any]]:
    """``agent``'s ``notify`` list, its shape checked; raises :class:`StoreError` naming
    the field."""
    raw = config.agents().get(agent, {}).get("notify", [])
    field = f"config.json: agents.{agent}.notify"
    if not isinstance(raw, list):
        raise StoreError(f"{field} must be a list of notifiers")
    if len(raw) > MAX_NOTIFIERS:
        raise StoreError(f"{field} holds {len(raw)} notifiers; the limit is {MAX_NOTIFIERS}")
    for lane, item in enumerate(raw):
        if not isinstance(item, dict):
            raise StoreError(f"{field}[{lane}] must be an object")
        if item.get("kind") not in NOTIFIER_KINDS:
            raise StoreError(f"{field}[{lane}].kind must be one of: "
                             f"{', '.join(NOTIFIER_KINDS)}")
    return raw


def enqueue_notices(store: Store, message: Message) -> None:
    """Queue one entry per notifier of each recipient. Never raises: it is delivered."""
    from .claims import notifier_queue  # here: `who` reads notifier_entries and
    from .queue import log  # never queues

    if message.is_broadcast or message.sender == SYSTEM_SENDER:
        return
    try:
        config = Config(store.load_config())
    except MailslotError:
        return  # the wake queue logs the broken config already
    for agent in message.to:
        if agent == message.sender or "@" in agent:
            continue  # an agent of another node: its own node tells it
        try:
            entries = notifier_entries(config, agent)
            for lane, item in enumerate(entries):
                log(store, "notify_queued", message.id, agent, method=label(lane, item))
                notifier_queue(store, lane).enqueue(
                    WakeEntry(message.id, agent, not_before=store.clock()))
        except MailslotError as exc:
            log(store, "notify_skipped", message.id, agent, reason=str(exc))


def label(lane: int, item: Mapping[str, Any]) -> str:
    """How a notifier is named in the log and the watcher's output: ``notify[1]:desktop``."""
    return f"notify[{lane}]:{item.get('kind')}"
