"""The service's overviews: where a message stands (``status``), what an agent sent
(``sent``), who is known (``who``) and whether a watcher runs (``doctor``'s own checks
are :mod:`.checkup`).

Reached through :class:`~mailslot.service.mailbox.Mailbox`; kept apart from the mail operations
because they read across every mailbox rather than one agent's.
"""

from __future__ import annotations

from ..access import instances
from ..access.authority import expired
from ..access.gates import group_of
from ..core.addresses import node_named
from ..core.config import DEFAULT_UNSURFACED_MINUTES, Config
from ..core.dates import datetime
from ..core.errors import MailslotError, NotFound, Unreadable
from ..core.ids import recipient_of, sender_of
from ..core.message import Message, State
from ..core.names import RESERVED
from ..core.results import AgentInfo, RecipientStatus, Status, WatcherInfo
from ..core.values import replace
from ..mail.broadcasts import to_serve
from ..mail.presence import summarize
from .timing import timed

TYPE_CHECKING = False  # typing is not loaded on the CLI path
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from ..store import Store

UNSURFACED_LOOKED = 200
"""How many of an agent's overdue unread messages (the oldest) ``who`` asks the events
log about: its ``unsurfaced`` count stops there, so it costs the same however much
mail waits (``status ID`` says of any one message)."""
UNSURFACED_EVENTS = 2000
"""How many of the events log's newest lines ``who`` reads for them at most: a message
shown to a model only before those counts as not shown (each new session of its agent
shows its unread mail again, so that agent had no new session since), and ``who``
costs the same however long the log (``status ID`` reads back to the delivery)."""
_RACING_RECEIPTS = 1000
"""How far ``status`` reads past a message's delivery receipt, for receipts written by
other processes a moment before the sender wrote its own."""


Times = dict[tuple[str, str], str]
"""When each agent read or finished a message: ``(event, agent) -> ts``."""
WAKE_EVENTS = ("wake_queued", "wake_skipped", "wake_attempt", "wake_ok", "wake_failed")
"""The wake lines of the events log (:mod:`mailslot.wake.queue`), newest first on the
ladder and on the web page's wake log."""


class Receipts:
    """What the events log says of one message, per recipient: read and done times,
    replies, its first showing to a model and how many there were (the ladder's
    ``surfaced``), and its newest wake line."""

    __slots__ = ("peer", "replied", "replies", "seen", "surfaced", "times", "wakes", "woken")

    def __init__(self) -> None:
        self.times: Times = {}
        self.replies: list[str] = []
        self.replied: dict[str, str] = {}  # replier -> when its first reply was sent
        self.surfaced: dict[str, dict[str, Any]] = {}  # agent -> the first showing
        self.seen: dict[str, dict[str, Any]] = {}  # agent -> the first proof it was given
        self.wakes: dict[str, dict[str, Any]] = {}  # agent -> the newest wake line
        self.woken: dict[str, str] = {}  # agent -> when a wake of it first succeeded
        self.peer: dict[str, dict[str, Any]] = {}  # AGENT@NODE -> forwarded or bounced

    def see_surfaced(self, event: dict[str, Any], message_id: str) -> None:
        """One ``surfaced`` line (newest first: an older one replaces the first), or
        the ``seen``/``missed`` line the host's record gave one (service.seen)."""
        agent = str(event.get("agent"))
        kind = event.get("event")
        if kind == "seen":
            self.seen[agent] = {"at": event.get("ts"), "host": event.get("host"),
                                "session": event.get("session"), "how": event.get("how")}
            return
        before = self.surfaced.get(agent) or {"times": 0, "again": 0, "missed": 0,
                                              "marked": False}
        if kind == "missed":
            self.surfaced[agent] = {**before, "missed": before["missed"] + 1}
            return
        again = message_id in (event.get("again") or ())
        self.surfaced[agent] = {"at": event.get("ts"), "host": event.get("host"),
                                "session": event.get("session"), "how": event.get("how"),
                                "times": 1 + before["times"],
                                "again": before["again"] + again,
                                "missed": before["missed"],
                                "marked": before["marked"] or bool(event.get("mark"))}

    def see_wake(self, event: dict[str, Any]) -> None:
        agent = str(event.get("agent"))
        if agent in self.wakes:
            return  # newest first: the first seen is the newest
        kind = str(event.get("event"))[5:]
        if kind == "failed" and event.get("final") is True:
            kind = "gave_up"
        said = event.get("reason") or event.get("said")  # a success's own words too
        self.wakes[agent] = {"outcome": kind, "method": event.get("method"),
                             "at": event.get("ts"), "reason": said}
        retry = _retry_at(event)
        if retry is not None:
            self.wakes[agent]["retry_at"] = retry


def _retry_at(event: dict[str, Any]) -> str | None:
    """When a failed wake that will be tried again is next due (ISO 8601), if the
    line says (``retry_in`` seconds after its ``ts``)."""
    after, ts = event.get("retry_in"), event.get("ts")
    if not isinstance(after, (int, float)) or not isinstance(ts, str):
        return None
    from ..core.dates import timedelta

    try:
        return (datetime.fromisoformat(ts) + timedelta(seconds=after)).isoformat()
    except (ValueError, OverflowError):
        return None


def _receipts(store: Store, ids: set[str], most: int | None = None
              ) -> dict[str, Receipts]:
    """The :class:`Receipts` of each of ``ids``, in one pass over the events log.

    Newest first, stopping soon after the last of their delivery receipts: nothing about
    a message is much older than it (a receipt racing the sender's own may land just
    before), so the log's history before it is never read (docs/format.md, "Events log");
    and after ``most`` lines whatever was found (mail imported with no delivery receipt,
    or delivered long ago, would otherwise cost the whole log).
    """
    found = {i: Receipts() for i in ids}
    undelivered = set(ids)
    left = most
    for event in store.events(newest_first=True):
        if left is not None:
            left -= 1
            if left < 0:
                break
        kind, subject = event.get("event"), event.get("id")
        if kind == "delivered" and subject in undelivered:
            undelivered.discard(subject)
            if not undelivered:
                left = _RACING_RECEIPTS if left is None else min(left, _RACING_RECEIPTS)
        if kind in ("surfaced", "seen", "missed"):
            shown = event.get("ids")
            for message_id in shown if isinstance(shown, list) else ():
                if message_id in found:
                    found[message_id].see_surfaced(event, message_id)
        elif subject not in found and kind != "replied":
            continue
        elif kind in ("read", "done"):
            key = (str(kind), str(event.get("agent")))
            found[str(subject)].times[key] = str(event.get("ts"))  # newest first: first wins
        elif kind in WAKE_EVENTS:
            found[str(subject)].see_wake(event)
            if kind == "wake_ok":  # newest first: the last seen is the first
                found[str(subject)].woken[str(event.get("agent"))] = str(event.get("ts"))
        elif kind in ("forwarded", "bounced"):  # mail for a peer: newest first wins
            found[str(subject)].peer.setdefault(str(event.get("agent")), dict(event))
        elif kind == "replied" and event.get("in_reply_to") in found:
            original = found[str(event.get("in_reply_to"))]
            original.replies.append(str(subject))
            original.replied[sender_of(str(subject))] = str(event.get("ts"))
    for receipts in found.values():
        receipts.replies.reverse()
    return found


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


def status(store: Store, message_id: str, who: Callable[[], list[AgentInfo]], *,
           viewer: str | None, now: datetime | None = None) -> Status:
    """Per-recipient state of a checked id, when each read and finished it, and replies,
    as ``viewer`` may see them (:func:`may_see`; ``NotFound`` when it may not, saying no
    more than for an id that names nothing), with each recipient's delivery ladder and,
    for mail not yet shown to a model, why it waits.

    A broadcast's recipients are every known agent but its sender (``who``).
    """
    return _status(store, message_id, _receipts(store, {message_id})[message_id], who,
                   viewer, Waiting(store, now))


def sent(store: Store, sender: str, who: Callable[[], list[AgentInfo]], limit: int,
         now: datetime | None = None) -> list[Status]:
    """What ``sender`` sent, newest first, one page, each with its recipients' states:
    from the store's index of what was sent, so a page costs the same however much was
    sent before it."""
    ids = store.sent_ids(sender, limit)
    if store.load_config().get("peers"):  # and what went to agents of peers
        from .peer_views import sent_ids

        ids = sorted(set(ids) | set(sent_ids(store, sender, limit)), reverse=True)[:limit]
    return statuses(store, ids, who, viewer=sender, now=now)


def _once(ask: Callable[[], list[AgentInfo]]) -> Callable[[], list[AgentInfo]]:
    """``ask``, asked at most once (``functools.cache``, without loading functools)."""
    answers: list[list[AgentInfo]] = []

    def once() -> list[AgentInfo]:
        if not answers:
            answers.append(ask())
        return answers[0]

    return once


def statuses(store: Store, ids: list[str], who: Callable[[], list[AgentInfo]], *,
             viewer: str | None, now: datetime | None = None) -> list[Status]:
    """The status of each of ``ids`` that ``viewer`` may see, in that order, from one pass
    over the events log; a message gone meanwhile is left out."""
    found = _receipts(store, set(ids))
    who = _once(who)  # a broadcast's recipients are everyone: ask once per page
    waiting = Waiting(store, now)
    result = []
    for message_id in ids:
        try:
            result.append(_status(store, message_id, found[message_id], who, viewer,
                                  waiting))
        except (NotFound, Unreadable):
            continue  # moved away while we listed, unreadable, or not the viewer's
    return result


def _status(store: Store, message_id: str, receipts: Receipts,
            who: Callable[[], list[AgentInfo]], viewer: str | None,
            waiting: Waiting) -> Status:
    # One answer for a message that is not there and one the viewer may not see, so
    # that asking never tells whether someone else's mail exists.
    missing = f"no message {message_id}" + (f" for {viewer}" if viewer else "")
    try:
        found = _any_status(store, message_id, receipts, who, waiting)
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


def _any_status(store: Store, message_id: str, receipts: Receipts,
                who: Callable[[], list[AgentInfo]], waiting: Waiting) -> Status:
    try:
        message, live = store.load_broadcast(message_id, header_only=True)
    except NotFound:
        return _directed_status(store, message_id, receipts, waiting)
    recipients = [
        _recipient(agent.name,
                   "read" if message_id in store.seen(agent.name) else "unread",
                   receipts, None)
        for agent in who()
        if agent.name != message.sender
    ]
    return Status(message, timed(message, recipients), receipts.replies, retracted=not live)


def _directed_status(store: Store, message_id: str, receipts: Receipts,
                     waiting: Waiting) -> Status:
    holders = _holders(store, message_id, [recipient_of(message_id)])
    if not holders:
        holders = _holders(store, message_id, store.agent_names())
    if holders:
        message, _ = store.load(next(iter(holders)), message_id, header_only=True)
    else:
        message = _sent_to_peers(store, message_id)
    recipients = timed(message, [waiting.remote(name, receipts, message_id) if "@" in name
                                 else _recipient(name, holders.get(name), receipts, waiting)
                                 for name in message.to])
    return Status(message, recipients, receipts.replies)


def _sent_to_peers(store: Store, message_id: str) -> Message:
    """The sender's copy of mail that went to agents of peers only (no local copy)."""
    if "@" in message_id:
        from .peer_views import sent_copy

        found = sent_copy(store, message_id)
        if found is not None:
            return found
    raise NotFound(f"no message {message_id}")


def _holders(store: Store, message_id: str, names: Sequence[str | None]
             ) -> dict[str, State]:
    """Which of ``names`` hold ``message_id``, in which state (``None``: nobody named:
    a message to several, whose id names only the first; an agent of a peer holds its
    copy on its own node)."""
    return {name: state for name in names
            if name is not None and "@" not in name
            and (state := store.state_of(name, message_id)) is not None}


def _recipient(name: str, state: State | None, receipts: Receipts,
               waiting: Waiting | None) -> RecipientStatus:
    """One recipient's ladder: its state, the receipts, the highest rung reached and,
    while no model was shown it, why (``waiting``: ``None`` for a broadcast)."""
    surfaced = receipts.surfaced.get(name)
    wake = receipts.wakes.get(name)
    replied = receipts.replied.get(name)
    if replied is not None:
        rung = "replied"
    elif state in ("read", "done"):
        rung = state
    elif name in receipts.seen:
        rung = "seen"
    elif surfaced is not None:
        rung = "surfaced"
    else:
        rung = "stored"
    why = waiting.why(name, wake) if waiting is not None and rung == "stored" \
        and state == "unread" else None
    return RecipientStatus(name, state, read_at=receipts.times.get(("read", name)),
                           done_at=receipts.times.get(("done", name)), rung=rung,
                           surfaced=surfaced, wake=wake, replied_at=replied, waiting=why,
                           seen=receipts.seen.get(name), woken_at=receipts.woken.get(name))


class Waiting:
    """Why mail that no model was shown yet cannot move: the wake gave up or was not
    tried, no session of its agent is live, or no watcher runs to wake it. What it
    reads (the live sessions, the config, the watcher) is read once per page."""

    def __init__(self, store: Store, now: datetime | None) -> None:
        self.store = store
        self.now = now or datetime.now().astimezone()
        self._live: dict[str, list[str]] | None = None
        self._config: Config | None = None
        self._watcher: WatcherInfo | None = None
        self._links: Any = None

    def remote(self, name: str, receipts: Receipts, message_id: str) -> RecipientStatus:
        """An agent of a peer: its ladder from the receipts its node sent back, and
        while it waits, the link's state (:mod:`.peer_views`)."""
        from .peer_views import Links, recipient

        if self._links is None:
            self._links = Links(self.store, Config(self.store.load_config()))
        return recipient(name, receipts, self._links, message_id)

    def why(self, agent: str, wake: dict[str, Any] | None) -> str:
        """One line; every stored, unread message has one (it is waiting for something)."""
        outcome = wake.get("outcome") if wake else None
        reason = f": {wake.get('reason')}" if wake and wake.get("reason") else ""
        if outcome == "gave_up":
            return f"the wake ({wake.get('method') if wake else '?'}) gave up{reason}"
        if self._live is None:
            self._live = instances.by_agent(self.store, self.now)
        if self._live.get(agent):
            return "a session of it is live but has not been shown it yet"
        if outcome == "skipped":
            return f"no live session, and it was not woken{reason}"
        try:
            self._config = self._config or Config(self.store.load_config())
        except MailslotError as exc:
            return f"no live session, and the config cannot be read ({exc})"
        setting = wake_setting(self._config, agent)
        if outcome is None and setting.split(" ")[0] in ("off", "unsupported"):
            return (f"no live session and no wake ({setting}): it waits for the agent's "
                    "next session")
        if outcome != "ok":
            self._watcher = self._watcher or watcher(self.store, self._config)
            if not self._watcher.running and not self._watcher.on_demand:
                return f"no live session, and no watcher runs to wake it ({setting})"
        if outcome == "failed":  # not final: it is tried again
            method = wake.get("method") if wake else "?"
            return f"no live session; the last wake ({method}) failed{reason}{_retrying(wake)}"
        if outcome == "queued":
            return "no live session; a wake is queued"
        if outcome == "attempt":
            return "no live session; a wake is being tried now"
        if outcome == "ok":
            return "no live session; it was woken, and has not looked yet"
        return f"no live session; not woken ({setting})"


def _retrying(wake: dict[str, Any] | None) -> str:
    """``(retrying at 14:48:08 UTC)``, when the failed wake's line says when."""
    retry = wake.get("retry_at") if wake else None
    if not isinstance(retry, str):
        return " (it is tried again)"
    when = datetime.fromisoformat(retry)
    return f" (retrying at {when:%Y-%m-%d %H:%M:%S} {when.tzname() or ''})".replace(" )", ")")


def who(store: Store, config: Config, now: datetime, *, online_only: bool = False
        ) -> list[AgentInfo]:
    """Every agent known from the config, a mailbox folder, a message's sender or a
    server, with unread counts, whether a server of it is online, its wake, how many
    agents share its group gate and whose child it is (``online_only``: those with a
    server online now)."""
    census = _Census(store, config, now)
    here = node_named(config.raw)
    found = [replace(census.info(name), node=here) for name in sorted(census.known)]
    if config.raw.get("peers"):
        from .peer_views import agents

        found += agents(store, config, now)
    return [info for info in found if info.online or not online_only]



class _Census:
    """What :func:`who` reads of every agent: each kind of fact read once, for all
    agents at once (in this order), and where each agent was found, in that order."""

    def __init__(self, store: Store, config: Config, now: datetime) -> None:
        self.store, self.config = store, config
        self.known: dict[str, list[str]] = {}
        if config.owner:
            self.note(config.owner, "owner")
        for name in config.agents():
            self.note(name, "config")
        self.unread: dict[str, int] = {}
        self.unlooked: set[str] = set()  # agents whose overdue mail may go past the oldest
        old = self._open_mail(_id_time(now, config))
        self.stuck, self.unseen = _unsurfaced(store, old)
        self.live = store.broadcast_ids()
        for message_id in self.live:
            self.note(sender_of(message_id), "messages")
        self.presence = summarize(store.presence(), now)
        for name in self.presence:
            self.note(name, "server")
        self.running = instances.by_agent(store, now)  # name@session
        self.gates = store.gated()  # every inbox not open, with a mailbox or not
        self.groups: dict[str, int] = {}
        for accept in self.gates.values():
            if (group := group_of(accept)) is not None:
                self.groups[group] = self.groups.get(group, 0) + 1
        registered = store.registered_agents()
        for record in registered:
            self.note(record.name, "registry")
        self.parents = {r.name: r.parent for r in registered if r.parent}
        self.expiries = {r.name: r.expires for r in registered if r.expires}
        self.lapsed = {r.name for r in registered if expired(r, now)}
        for name in self.running:
            self.note(name, "session")
        self.watching: WatcherInfo | None = None

    def note(self, name: str, source: str) -> None:
        """``name`` was found in ``source`` (a reserved name is no agent)."""
        if name in RESERVED or name.startswith("_") or "@" in name:
            return  # an agent of a peer is listed from its node's roster
        sources = self.known.setdefault(name, [])
        if source not in sources:
            sources.append(source)

    def _open_mail(self, cutoff: str) -> dict[str, list[str]]:
        """Every mailbox's unread count and correspondents (read and done mail are never
        listed); returns each agent's unread mail older than ``cutoff``."""
        old: dict[str, list[str]] = {}  # unread mail older than the threshold, per agent
        for name in self.store.agent_names():
            self.note(name, "mailbox")
            for sender in sorted(self.store.correspondents(name)):
                self.note(sender, "messages")
            self.unread[name], oldest = self.store.count_unread(name, UNSURFACED_LOOKED)
            overdue = [i for i in oldest if i < cutoff]
            if overdue:  # the oldest are the most overdue, and name "since"
                old[name] = overdue
                if len(overdue) == UNSURFACED_LOOKED < self.unread[name]:
                    self.unlooked.add(name)
        return old

    def info(self, name: str) -> AgentInfo:
        """What ``who`` shows of ``name``."""
        seen = self.store.seen(name) if self.live else set()
        pending = len(to_serve(self.live, seen, name))
        accept = self.gates.get(name, "open")
        group = group_of(accept)
        stuck = self.stuck.get(name)
        info = AgentInfo(name, self.unread.get(name, 0) + pending, self.known[name],
                         wake=wake_setting(self.config, name),
                         notify=notify_setting(self.config, name),
                         gated=accept != "open", gate_group=group,
                         instances=self.running.get(name, []),
                         group_members=self.groups.get(group) if group else None,
                         subagent_of=self.parents.get(name), expires=self.expiries.get(name),
                         expired=name in self.lapsed,
                         unsurfaced=len(stuck or ()),
                         unsurfaced_since=_date_of(min(stuck)) if stuck else None,
                         unsurfaced_more=name in self.unlooked and name in self.stuck,
                         unseen=self.unseen.get(name, 0))
        if info.wake.split(" ")[0] not in ("off", "unsupported") or info.notify != "none":
            self.watching = self.watching or watcher(self.store, self.config)
            info = replace(info, watcher=self.watching)
        if name in self.presence:
            here = self.presence[name]
            info = replace(info, online=here.online, last_seen=here.last_seen,
                           sessions=here.sessions)
        return info


def _id_time(now: datetime, config: Config) -> str:
    """The id a message sent ``unsurfaced_after_minutes`` ago would start with: ids
    sort by their time (UTC), so an older message's id sorts before it."""
    from ..core.dates import UTC, timedelta

    try:
        after = config.unsurfaced_after()
    except MailslotError:
        after = DEFAULT_UNSURFACED_MINUTES * 60.0  # doctor names the field (problems)
    then = (now - timedelta(seconds=after)).astimezone(UTC)
    return f"{then:%Y-%m-%d_%H%M%S}.{then.microsecond:06d}"


def _date_of(message_id: str) -> str:
    """The time an id carries, as an ISO date (UTC)."""
    return f"{message_id[:10]}T{message_id[11:13]}:{message_id[13:15]}:{message_id[15:17]}Z"


def _unsurfaced(store: Store, old: dict[str, list[str]]
                ) -> tuple[dict[str, list[str]], dict[str, int]]:
    """Of each agent's old unread mail, what no model was ever shown, and how much was
    shown by a host whose record would show it given but never did (``seen``): one
    pass over the events log, and none when there is no such mail (the usual case)."""
    if not old:
        return {}, {}
    found = _receipts(store, {i for ids in old.values() for i in ids}, UNSURFACED_EVENTS)
    stuck = {name: [i for i in ids if name not in found[i].surfaced]
             for name, ids in old.items()}
    unseen = {name: sum(1 for i in ids if (found[i].surfaced.get(name) or {}).get("marked")
                        and name not in found[i].seen) for name, ids in old.items()}
    return ({name: ids for name, ids in stuck.items() if ids},
            {name: count for name, count in unseen.items() if count})


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
