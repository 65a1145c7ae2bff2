"""What the owner's web page reads: every agent at a glance, any mailbox by state, a
message with its body and where it stands, a thread, broadcasts, recent wakes, and
what changed since the page last looked.

The person who owns the mailbox folder can open every file in it anyway, so the page
shows every mailbox (unlike ``read_messages``, which keeps other agents' bodies from a
model). Writing goes through :func:`owner_mailbox`: the page speaks only as the
config's ``owner``, through the same :class:`~mailslot.service.mailbox.Mailbox` rules as every
other front end.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..access.identity import Identity
from ..core.config import Config
from ..core.errors import MailslotError, NoIdentity, NotFound, Unreadable
from ..core.message import STATES, Message, State
from ..core.results import AgentInfo, Status, WatcherInfo
from ..store import Store
from .mailbox import Mailbox
from .overview import WAKE_EVENTS

OWNER_SOURCE = "config.json owner"


def owner_mailbox(store: Store) -> Mailbox:
    """The service speaking as the config's ``owner``; ``NoIdentity`` if none is set."""
    owner = Config(store.load_config()).owner
    if owner is None:
        raise NoIdentity("no owner: run `mailslot config set owner NAME` to send from "
                         "the page")
    return Mailbox(store, Identity(owner, OWNER_SOURCE))


@dataclass(frozen=True)
class WakeView:
    """How an agent is woken, as a switch shows it: on or off, and whether it can be."""

    method: str
    on: bool
    can_wake: bool
    why_not: str = ""  # for a switch that cannot be turned on


@dataclass(frozen=True)
class AgentRow:
    info: AgentInfo
    counts: dict[str, int]
    wake: WakeView


@dataclass(frozen=True)
class Listing:
    """One mailbox's messages in one state, newest first, and how many were left out."""

    agent: str
    state: State
    messages: list[Message]
    more: int = 0
    unreadable: int = 0
    counts: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Shown:
    """A whole message and where it stands with each recipient."""

    message: Message
    status: Status
    owner_state: State | None  # the owner's copy, if the owner is a recipient


def wake_view(config: Config, agent: str) -> WakeView:
    """The switch for ``agent``'s wakes: a config error or an ``unsupported`` host
    cannot be switched on, and the reason says why."""
    from ..wake.methods import UnsupportedMethod
    from ..wake.policy import UNSUPPORTED, settings_for

    try:
        settings = settings_for(config, agent)
    except MailslotError as exc:
        return WakeView("?", False, False, str(exc))
    on = settings.opt_in != "never"
    if settings.method == UNSUPPORTED:
        return WakeView(UNSUPPORTED, False, False, UnsupportedMethod.summary)
    if not settings.method:
        return WakeView("", on, False, "no wake method chosen (see Settings)")
    return WakeView(settings.method, on, True)


def counts(store: Store, agent: str) -> dict[str, int]:
    """How many messages ``agent`` holds in each state."""
    found: dict[str, int] = {state: 0 for state in STATES}
    for _, state in store.entries(agent, STATES):
        found[state] += 1
    return found


def agents(box: Mailbox) -> list[AgentRow]:
    """Every agent ``who`` knows, with per-state counts and its wake switch."""
    config = box.config
    return [AgentRow(info, counts(box.store, info.name), wake_view(config, info.name))
            for info in box.who()]


def _headers(store: Store, pairs: Iterable[tuple[str | None, str]], limit: int, *,
             bodies: bool = False) -> tuple[list[Message], int]:
    """Up to ``limit`` headers (``bodies``: whole messages) of ``(mailbox, id)`` pairs
    (``None``: a broadcast), and how many unreadable files were skipped."""
    found: list[Message] = []
    unreadable = 0
    for agent, message_id in pairs:
        try:
            if agent is None:
                message, _ = store.load_broadcast(message_id, header_only=not bodies)
            else:
                message, _ = store.load(agent, message_id, header_only=not bodies)
        except NotFound:
            continue  # moved meanwhile
        except Unreadable:
            unreadable += 1
            continue
        found.append(message)
        if len(found) == limit:
            break
    return found, unreadable


def listing(store: Store, agent: str, state: State, *, limit: int = 100) -> Listing:
    """``agent``'s mail in ``state``, newest first."""
    ids = sorted((i for i, _ in store.entries(agent, (state,))), reverse=True)
    messages, unreadable = _headers(store, ((agent, i) for i in ids), limit)
    return Listing(agent, state, messages, max(0, len(ids) - limit), unreadable,
                   counts(store, agent))


def broadcasts(store: Store, *, live: bool, limit: int = 100) -> list[Message]:
    """Standing (``live``) or retracted broadcasts, newest first."""
    ids = sorted(store.broadcast_ids(live=live), reverse=True)
    return _headers(store, ((None, i) for i in ids), limit)[0]


def show(box: Mailbox, raw_id: str) -> Shown:
    """A message from any mailbox, whole, with its per-recipient state; marks nothing."""
    status = box.status(raw_id)
    message_id = status.message.id
    if status.message.is_broadcast:
        message, _ = box.store.load_broadcast(message_id)
    else:
        holder = next(r.agent for r in status.recipients if r.state is not None)
        message, _ = box.store.load(holder, message_id)
    owner = box.config.owner
    mine = None if owner is None else box.store.state_of(owner, message_id)
    return Shown(message, status, mine)


def thread(store: Store, message: Message, *, limit: int = 500, bodies: bool = False
           ) -> list[Message]:
    """Every message of ``message``'s thread, oldest first (its first message and every
    later message naming it as ``thread``); ``bodies``: whole messages."""
    root = message.thread or message.id
    seen: dict[str, tuple[str | None, str]] = {}
    for agent in store.agent_names():
        for message_id, _ in store.entries(agent, STATES):
            if message_id >= root:  # ids sort by time: nothing in it predates its root
                seen.setdefault(message_id, (agent, message_id))
    for live in (True, False):
        for message_id in store.broadcast_ids(live=live):
            if message_id >= root:
                seen.setdefault(message_id, (None, message_id))
    headers, _ = _headers(store, (seen[i] for i in sorted(seen)), len(seen) or 1)
    ids = [m.id for m in headers if m.id == root or m.thread == root][:limit]
    if not bodies:
        wanted = set(ids)
        return [m for m in headers if m.id in wanted]
    return _headers(store, (seen[i] for i in ids), len(ids) or 1, bodies=True)[0]


def watcher(store: Store) -> WatcherInfo | None:
    """Whether a watcher runs for the page's mailbox on this machine (``None``: the
    config cannot be read, which the page shows elsewhere)."""
    from .overview import watcher as running

    try:
        return running(store, Config(store.load_config()))
    except MailslotError:
        return None


def wake_log(store: Store, *, limit: int = 20) -> list[dict[str, Any]]:
    """The newest wake decisions and attempts, newest first (ids, names and reasons only:
    the log never holds a subject or a body)."""
    found: list[dict[str, Any]] = []
    for event in store.events(newest_first=True):
        if event.get("event") in WAKE_EVENTS:
            found.append(event)
            if len(found) == limit:
                break
    return found


Snapshot = dict[str, str]
"""Every message id in the store and where it is: ``mailbox/state`` or ``broadcast``."""


def snapshot(store: Store) -> Snapshot:
    """Where every message is now, to tell what changed since the last look."""
    now: Snapshot = {}
    for agent in store.agent_names():
        for message_id, state in store.entries(agent, STATES):
            now[f"{agent}/{message_id}"] = state
    for message_id in store.broadcast_ids():
        now[f"broadcast/{message_id}"] = "live"
    return now


def arrivals(store: Store, before: Snapshot, after: Snapshot, *, limit: int = 20
             ) -> list[dict[str, Any]]:
    """The messages new in ``after`` (once each, however many mailboxes got them), as
    the page announces them: id, sender, recipients and subject, newest last."""
    new = sorted({key.split("/", 1)[1]: key for key in after if key not in before}.items())
    pairs = [(None if key.startswith("broadcast/") else key.split("/", 1)[0], message_id)
             for message_id, key in new[-limit:]]
    messages, _ = _headers(store, pairs, limit)
    return [{"id": m.id, "from": m.sender, "to": list(m.to), "subject": m.subject}
            for m in messages]
