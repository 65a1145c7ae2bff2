"""The service's overviews: where a message stands (``status``), what an agent sent
(``sent``), who is known (``who``), and whether the mailbox folder is healthy
(``doctor``).

Reached through :class:`~mailslot.service.mailbox.Mailbox`; kept apart from the mail operations
because they read across every mailbox rather than one agent's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import cache

from ..access import instances
from ..access.gates import group_of
from ..core.config import Config
from ..core.dates import datetime
from ..core.errors import MailslotError, NotFound, Unreadable
from ..core.ids import sender_of
from ..core.message import STATES, Message, State
from ..core.names import RESERVED
from ..core.results import AgentInfo, DoctorReport, RecipientStatus, Status, WatcherInfo
from ..core.values import replace
from ..mail.broadcasts import to_serve
from ..mail.presence import summarize

TYPE_CHECKING = False  # typing is not loaded on the CLI path
if TYPE_CHECKING:
    from ..store import Store

STALE_STAGING_SECONDS = 36 * 3600
_RACING_RECEIPTS = 1000
"""How far ``status`` reads past a message's delivery receipt, for receipts written by
other processes a moment before the sender wrote its own."""


Times = dict[tuple[str, str], str]
"""When each agent read or finished a message: ``(event, agent) -> ts``."""


def _receipts(store: Store, ids: set[str]) -> tuple[dict[str, Times], dict[str, list[str]]]:
    """Read/done times and replies of each of ``ids``, in one pass over the events log.

    Newest first, stopping soon after the last of their delivery receipts: nothing about
    a message is much older than it (a receipt racing the sender's own may land just
    before), so the log's history before it is never read (docs/format.md, "Events log").
    """
    times: dict[str, Times] = {i: {} for i in ids}
    replies: dict[str, list[str]] = {i: [] for i in ids}
    undelivered = set(ids)
    left: int | None = None
    for event in store.events(newest_first=True):
        if left is not None:
            left -= 1
            if left < 0:
                break
        kind, subject = event.get("event"), event.get("id")
        if kind == "delivered" and subject in undelivered:
            undelivered.discard(subject)
            if not undelivered:
                left = _RACING_RECEIPTS
        if kind in ("read", "done") and subject in times:
            key = (str(kind), str(event.get("agent")))
            times[str(subject)][key] = str(event.get("ts"))  # newest first: the first wins
        elif kind == "replied" and event.get("in_reply_to") in replies:
            replies[str(event.get("in_reply_to"))].append(str(subject))
    for found in replies.values():
        found.reverse()
    return times, replies


def may_see(message: Message, viewer: str | None, *, served: bool = False,
            live: bool = True) -> bool:
    """The one rule of who may see where a message stands (its recipients, their states,
    its replies): its sender and its recipients. ``viewer`` ``None`` is the mailbox's
    owner (see :attr:`Mailbox.viewer <mailslot.service.mailbox.Mailbox.viewer>`), who sees every
    message. A broadcast is every agent's while it stands; once retracted, only of those
    it was ``served`` to (as reading it is)."""
    if viewer is None or message.sender == viewer:
        return True
    if message.is_broadcast:
        return live or served
    return viewer in message.to


def sent_by(store: Store, sender: str) -> Iterator[str]:
    """The ids of every message ``sender`` sent that is still in a mailbox or standing
    (or retracted) as a broadcast, in no order."""
    for name in store.agent_names():
        yield from (i for i, _ in store.entries(name, STATES) if sender_of(i) == sender)
    for live in (True, False):
        yield from (i for i in store.broadcast_ids(live=live) if sender_of(i) == sender)


def status(store: Store, message_id: str, who: Callable[[], list[AgentInfo]], *,
           viewer: str | None) -> Status:
    """Per-recipient state of a checked id, when each read and finished it, and replies,
    as ``viewer`` may see them (:func:`may_see`; ``NotFound`` when it may not, saying no
    more than for an id that names nothing).

    A broadcast's recipients are every known agent but its sender (``who``).
    """
    times, replies = _receipts(store, {message_id})
    return _status(store, message_id, times[message_id], replies[message_id], who, viewer)


def sent(store: Store, sender: str, who: Callable[[], list[AgentInfo]], limit: int
         ) -> list[Status]:
    """What ``sender`` sent, newest first, one page, each with its recipients' states."""
    mine = set(sent_by(store, sender))
    return statuses(store, sorted(mine, reverse=True)[:limit], who, viewer=sender)


def statuses(store: Store, ids: list[str], who: Callable[[], list[AgentInfo]], *,
             viewer: str | None) -> list[Status]:
    """The status of each of ``ids`` that ``viewer`` may see, in that order, from one pass
    over the events log; a message gone meanwhile is left out."""
    times, replies = _receipts(store, set(ids))
    who = cache(who)  # a broadcast's recipients are everyone: ask once per page
    result = []
    for message_id in ids:
        try:
            result.append(_status(store, message_id, times[message_id],
                                  replies[message_id], who, viewer))
        except (NotFound, Unreadable):
            continue  # moved away while we listed, unreadable, or not the viewer's
    return result


def _status(store: Store, message_id: str, times: Times, replies: list[str],
            who: Callable[[], list[AgentInfo]], viewer: str | None) -> Status:
    # One answer for a message that is not there and one the viewer may not see, so
    # that asking never tells whether someone else's mail exists.
    missing = f"no message {message_id}" + (f" for {viewer}" if viewer else "")
    try:
        found = _any_status(store, message_id, times, replies, who)
    except NotFound:
        raise NotFound(missing) from None
    message = found.message
    served = viewer is not None and message.is_broadcast and \
        message_id in store.seen(viewer)
    if not may_see(message, viewer, served=served, live=not found.retracted):
        raise NotFound(missing)
    if viewer is None or message.sender == viewer:
        return found
    # A recipient sees its own answer, not the other recipients' answers to the sender.
    return replace(found, replies=[r for r in found.replies if sender_of(r) == viewer])


def _any_status(store: Store, message_id: str, times: Times, replies: list[str],
                who: Callable[[], list[AgentInfo]]) -> Status:
    try:
        message, live = store.load_broadcast(message_id, header_only=True)
    except NotFound:
        return _directed_status(store, message_id, times, replies)
    recipients = [
        RecipientStatus(
            agent.name,
            "read" if message_id in store.seen(agent.name) else "unread",
            read_at=times.get(("read", agent.name)),
        )
        for agent in who()
        if agent.name != message.sender
    ]
    return Status(message, recipients, replies, retracted=not live)


def _directed_status(
    store: Store, message_id: str, times: dict[tuple[str, str], str], replies: list[str]
) -> Status:
    holders: dict[str, State] = {
        name: state
        for name in store.agent_names()
        if (state := store.state_of(name, message_id)) is not None
    }
    if not holders:
        raise NotFound(f"no message {message_id}")
    message, _ = store.load(next(iter(holders)), message_id, header_only=True)
    recipients = [
        RecipientStatus(
            name,
            holders.get(name),
            read_at=times.get(("read", name)),
            done_at=times.get(("done", name)),
        )
        for name in message.to
    ]
    return Status(message, recipients, replies)


def who(store: Store, config: Config, now: datetime, *, online_only: bool = False
        ) -> list[AgentInfo]:
    """Every agent known from the config, a mailbox folder, a message's sender or a
    server, with unread counts, whether a server of it is online, its wake, how many
    agents share its group gate and whose child it is (``online_only``: those with a
    server online now)."""
    known: dict[str, list[str]] = {}

    def note(name: str, source: str) -> None:
        if name in RESERVED or name.startswith("_"):
            return
        sources = known.setdefault(name, [])
        if source not in sources:
            sources.append(source)

    if config.owner:
        note(config.owner, "owner")
    for name in config.agents():
        note(name, "config")
    unread: dict[str, int] = {}
    for name in store.agent_names():
        note(name, "mailbox")
        for message_id, state in store.entries(name, ("unread", "read", "done")):
            note(sender_of(message_id), "messages")
            if state == "unread":
                unread[name] = unread.get(name, 0) + 1
    live = store.broadcast_ids()
    for message_id in live:
        note(sender_of(message_id), "messages")
    presence = summarize(store.presence(), now)
    for name in presence:
        note(name, "server")
    running = instances.by_agent(store, now)  # name@session
    gates = {name: store.accept_of(name) for name in store.agent_names()}
    groups: dict[str, int] = {}
    for accept in gates.values():
        if (group := group_of(accept)) is not None:
            groups[group] = groups.get(group, 0) + 1
    registered = store.registered_agents()
    for record in registered:
        note(record.name, "registry")
    parents = {r.name: r.parent for r in registered if r.parent}
    for name in running:
        note(name, "session")
    result = []
    watching: WatcherInfo | None = None
    for name in sorted(known):
        seen = store.seen(name) if live else set()
        pending = len(to_serve(live, seen, name))
        accept = gates[name] if name in gates else store.accept_of(name)
        group = group_of(accept)
        info = AgentInfo(name, unread.get(name, 0) + pending, known[name],
                         wake=wake_setting(config, name), notify=notify_setting(config, name),
                         gated=accept != "open", gate_group=group,
                         instances=running.get(name, []),
                         group_members=groups.get(group) if group else None,
                         subagent_of=parents.get(name))
        if info.wake.split(" ")[0] not in ("off", "unsupported") or info.notify != "none":
            watching = watching or watcher(store, config)
            info = replace(info, watcher=watching)
        if name in presence:
            here = presence[name]
            info = replace(info, online=here.online, last_seen=here.last_seen,
                           sessions=here.sessions)
        if info.online or not online_only:
            result.append(info)
    return result


def watcher(store: Store, config: Config) -> WatcherInfo:
    """Whether a watcher runs for ``store`` on this machine, and whether one is wanted."""
    from ..mail import watchers

    found = watchers.record(store)
    info = WatcherInfo(found is not None, watchers.wanted(config.raw),
                       watchers.on_demand_allowed(config.raw))
    if found is None:
        return info
    pid = found.get("pid")
    return replace(info, how=_text(found.get("how")), pid=pid if isinstance(pid, int) else None,
                   host=_text(found.get("host")), started=_text(found.get("started")),
                   log=_text(found.get("log")) if found.get("how") == watchers.ON_DEMAND
                   else None)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def notify_setting(config: Config, agent: str) -> str:
    """``agent``'s notifiers as ``who`` shows them: kinds, ``none`` or the config error."""
    from ..wake.notify_queue import notifier_entries  # only who needs it here

    try:
        entries = notifier_entries(config, agent)
    except MailslotError:
        return "config error (mailslot watch --validate)"
    return ", ".join(str(e["kind"]) for e in entries) or "none"


def wake_setting(config: Config, agent: str) -> str:
    """``agent``'s wake as ``who`` shows it: the method, ``off``, or the config error."""
    from ..wake.policy import settings_for  # only who needs it here

    try:
        settings = settings_for(config, agent)
    except MailslotError:
        return "config error (mailslot watch --validate)"
    if settings.opt_in == "never":
        return "off"
    return settings.method + (" (on request)" if settings.opt_in == "requested" else "")


def doctor(store: Store, *, fix: bool = False, deep: bool = False) -> DoctorReport:
    """Check permissions, config, wake settings and leftovers; with ``deep`` (or ``fix``)
    also read every message; with ``fix``, repair what is safe to and move unreadable
    messages to the quarantine folder (nothing is ever deleted but stale staging files).
    """
    fixed: list[str] = []
    if fix:
        changed = store.fix_permissions()
        if changed:
            fixed.append(f"tightened permissions on {changed} path(s)")
    problems = store.problems()
    watching: WatcherInfo | None = None
    try:
        config = Config(store.load_config())
        problems.extend(config.problems())
        watching = watcher(store, config)
    except MailslotError as exc:  # an unreadable config is a finding, not a crash
        problems.append(str(exc))
    if watching is not None and watching.wanted and not watching.running \
            and not watching.on_demand:
        problems.append(f"watcher: {watching.describe()}")
    problems.extend(_wake_problems(store))
    if deep or fix:
        problems.extend(_unreadable(store, fix, fixed))
    try:
        staged = store.staging()
    except MailslotError as exc:  # tmp/ itself planted or unusable: a finding too
        problems.append(str(exc))
        staged = []
    stale = [s for s in staged if s.age_seconds > STALE_STAGING_SECONDS]
    if stale and fix:
        removed = 0
        for item in stale:
            try:
                store.remove_staging(item)
                removed += 1
            except MailslotError as exc:  # swapped for a folder meanwhile, or locked
                problems.append(str(exc))
        if removed:
            fixed.append(f"removed {removed} staging file(s) older than 36 hours")
    elif stale:
        problems.append(
            f"{len(stale)} staging file(s) older than 36 hours (left by a crashed writer;"
            " `mailslot doctor --fix` removes them)"
        )
    return DoctorReport(store.location, problems, fixed, watching)


def _wake_problems(store: Store) -> list[str]:
    """What ``watch --validate`` rejects, so ``doctor`` never says ok over it."""
    from ..wake.report import validate  # only doctor needs it here

    report = validate(store)  # its config-wide problems are the config's, reported above
    return [f"wake: {a.agent}: {p}" for a in report.agents for p in a.problems]


def _unreadable(store: Store, fix: bool, fixed: list[str]) -> list[str]:
    """Unreadable messages, each named; with ``fix``, moved to the quarantine folder."""
    problems: list[str] = []
    moved = 0
    for agent, message_id, why in store.unreadable():
        if not fix:
            problems.append(f"{why} (`mailslot doctor --fix` moves it to quarantine)")
            continue
        try:
            store.quarantine(agent, message_id)
            moved += 1
        except MailslotError as exc:
            problems.append(f"{why}; not moved: {exc}")
    if moved:
        fixed.append(f"moved {moved} unreadable message(s) to the quarantine folder")
    return problems
