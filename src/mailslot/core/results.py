"""What the service returns: plain values front ends print or turn into JSON."""

from __future__ import annotations

from .message import Message, State
from .values import asdict, dataclass, field, replace

TYPE_CHECKING = False  # typing is not loaded on the CLI path
if TYPE_CHECKING:
    from typing import Any


@dataclass(frozen=True)
class Session:
    """One server of an agent, as its record says (``pid``, ``hostname`` and ``cwd`` are
    ``None`` where the caller may not see them: :meth:`without_machine`)."""

    pid: int | None
    hostname: str | None
    program: str | None
    cwd: str | None
    started: str
    heartbeat: str
    stopped: str | None = None
    channel: bool = False  # started with --channel: pushes arrivals into its session
    session: str | None = None  # the session id (fencing, name@session)

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Session | None:
        """A record from the store, or ``None`` if it is not shaped like one of ours."""
        pid, started, beat = record.get("pid"), record.get("started"), record.get("heartbeat")
        if isinstance(pid, bool) or not isinstance(pid, int) or pid < 1:
            return None
        if not isinstance(started, str) or not isinstance(beat, str):
            return None

        def text(key: str) -> str | None:
            value = record.get(key)
            return value if isinstance(value, str) else None

        return cls(pid, text("hostname") or "", text("program"), text("cwd"), started, beat,
                   text("stopped"), record.get("channel") is True, text("session"))

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def without_machine(self) -> Session:
        """The session as a remote or child agent sees it: its presence, not where it
        runs (process id, folder, host name)."""
        return replace(self, pid=None, hostname=None, cwd=None)

    @property
    def last_seen(self) -> str:
        return self.stopped or self.heartbeat



def where_archived(message_id: str) -> str:
    """Where the owner's ``mailslot archive`` keeps a message and how it comes back."""
    month = message_id[:7]
    return (f"archived in archive/{month}.zip; the owner brings it back with: "
            f"mailslot archive --restore {month}")


@dataclass(frozen=True)
class Item:
    """A message as one mailbox holds it: the message, its state there, and whose it is."""

    message: Message
    state: State
    mailbox: str
    short: str = ""  # a shorter id that names it uniquely (see shortids), where known
    archived: bool = False  # found in a month archive (retention), not in the mailbox

    @property
    def shown_id(self) -> str:
        return self.short or self.message.id

    def as_dict(self, *, with_body: bool = False) -> dict[str, Any]:
        data = self.message.as_dict(with_body=with_body)
        data["state"] = self.state
        data["mailbox"] = self.mailbox
        data["short"] = self.shown_id
        if self.archived:
            data["archived"] = True
        return data


class Page(list[Item]):
    """A page of mail, newest first, and how many unreadable files were skipped.

    One bad file (empty, broken YAML, a header naming another id) never breaks a whole
    inbox: it is skipped and counted, and ``mailslot doctor`` names it.
    """

    def __init__(self, items: list[Item] | None = None, unreadable: int = 0) -> None:
        super().__init__(items or [])
        self.unreadable = unreadable


class Found(list[Item]):
    """Search hits, best first, and how many of the newest messages the search did not
    cover yet (still being indexed)."""

    def __init__(self, items: list[Item], unsearched: int = 0) -> None:
        super().__init__(items)
        self.unsearched = unsearched

    @property
    def still_indexing(self) -> str:
        """The one line that says what the search may have missed, or ``""``."""
        if not self.unsearched:
            return ""
        n = self.unsearched
        return (f"still indexing: {n} newest message{'s' if n != 1 else ''} not yet "
                "searched (search again in a moment)")


class Finished(list[Item]):
    """The messages ``done`` finished, and the ids it could not (reported one by one)."""

    SHOWN = 20
    """At most this many missing ids are named; the rest are counted."""

    def __init__(self, items: list[Item], missing: list[str]) -> None:
        super().__init__(items)
        self.missing = missing

    def missing_named(self) -> list[str]:
        """The missing ids to name (at most :data:`SHOWN`)."""
        return self.missing[: self.SHOWN]

    def missing_text(self) -> str:
        """``a, b and 3 more``: the missing ids for one line."""
        named = ", ".join(self.missing_named())
        more = len(self.missing) - self.SHOWN
        return f"{named} and {more} more" if more > 0 else named


@dataclass(frozen=True)
class InboxPage:
    """One page of a listing, how many come after it, and (for an empty page) how many
    done messages the listing left out, and how many the owner archived, by month."""

    items: Page
    more: int = 0
    done_hidden: int = 0
    archived: tuple[tuple[str, int], ...] = ()

    def archived_note(self) -> str:
        """``5 archived in 2026-03..2026-05: ...``: where the mail of an empty listing
        went, and how to find it or bring it back; ``""`` when none was archived."""
        if not self.archived:
            return ""
        months = [month for month, _ in self.archived]
        count = sum(n for _, n in self.archived)
        span = months[0] if len(months) == 1 else f"{months[0]}..{months[-1]}"
        which = " ".join(months) if len(months) <= 3 else "--all"
        return (f"{count} archived in {span}: mailslot search finds them, and the owner "
                f"brings them back with mailslot archive --restore {which}")


@dataclass(frozen=True)
class RecipientStatus:
    """One recipient's delivery ladder (docs/cli.md, "The delivery ladder")."""

    agent: str
    state: State | None  # None: the copy is gone (or was never delivered)
    read_at: str | None = None
    done_at: str | None = None
    rung: str = "stored"  # the highest reached: stored, surfaced, seen, read, done, replied
    surfaced: dict[str, Any] | None = None  # first shown to a model: at, host, session, how,
    # times; again (shown again: the record showed it not given), missed, marked
    wake: dict[str, Any] | None = None  # the newest wake line: outcome, method, at, reason
    replied_at: str | None = None
    waiting: str | None = None  # stored and unread: why no model was shown it yet
    # (an agent of a peer: rung "queued" while it waits for the link, "bounced" once it
    # went back to its sender; ``waiting`` says why)
    seen: dict[str, Any] | None = None  # the host's record showed it given: at, host, ...
    woken_at: str | None = None  # when a wake of it first succeeded
    timing: dict[str, float] | None = None  # seconds from stored to each rung reached


@dataclass(frozen=True)
class Status:
    """Where a sent message stands with each recipient, and what answered it."""

    message: Message
    recipients: list[RecipientStatus]
    replies: list[str]
    retracted: bool = False
    short: str = ""  # a shorter id that names it uniquely, where known

    def as_dict(self) -> dict[str, Any]:
        data = self.message.as_dict(with_body=False)
        if self.short:
            data["short"] = self.short
        data["retracted"] = self.retracted
        data["recipients"] = [r.__dict__ for r in self.recipients]
        data["replies"] = self.replies
        return data


@dataclass(frozen=True)
class WatcherInfo:
    """Whether a watcher runs for this mailbox on this machine (judged by its lock), as
    its record says, and whether one is wanted (some agent has a wake or notifier)."""

    running: bool
    wanted: bool
    on_demand: bool = True  # watcher.on_demand: a send, hook or server may start one
    how: str | None = None  # foreground, on-demand or service
    pid: int | None = None
    host: str | None = None
    started: str | None = None
    log: str | None = None  # where an on-demand watcher writes

    def without_machine(self) -> WatcherInfo:
        """As a remote or child agent sees it: whether, how and since when only."""
        return replace(self, pid=None, host=None, log=None)

    def describe(self) -> str:
        """One line for ``who`` and ``doctor``."""
        if self.running:
            where = f", pid {self.pid} on {self.host}" if self.pid else ""
            since = f", since {self.started}" if self.started else ""
            return f"running here ({self.how or 'starting'}{where}{since})"
        if not self.wanted:
            return "none running here (none needed: no agent has a wake or notifier)"
        if self.on_demand:
            return ("none running here: agents have wakes, and the next send, hook or "
                    "server starts one")
        return ("none running here, and watcher.on_demand is false: wakes wait until "
                "`mailslot watch` runs")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class AgentInfo:
    name: str
    unread: int
    known_from: list[str] = field(default_factory=list)
    online: bool = False  # a server of this agent is running now (see presence.py)
    last_seen: str | None = None  # when a server of this agent last showed life
    sessions: list[Session] = field(default_factory=list)  # its servers online now
    wake: str = "off"  # how its config lets it be woken (see wake_setting)
    notify: str = "none"  # its notifiers' kinds (see notify_setting)
    gated: bool = False  # takes mail from admitted members only
    instances: list[str] = field(default_factory=list)  # "SHORT (program)"
    gate_group: str | None = None  # the group gate its inbox is behind
    watcher: WatcherInfo | None = None  # for an agent with a wake or notifier: who wakes it
    group_members: int | None = None  # how many agents are behind its group gate
    subagent_of: str | None = None  # its parent, for a registered child agent
    expires: str | None = None  # when its credential expires (a registered agent's)
    expired: bool = False  # ... and that time has passed: its credential is refused
    unsurfaced: int = 0  # unread mail no model was shown, older than unsurfaced_after_minutes
    # (of the oldest 200 such: service.overview.UNSURFACED_LOOKED)
    unsurfaced_since: str | None = None  # the oldest such message's date
    unsurfaced_more: bool = False  # more overdue mail than was looked at: "at least"
    unseen: int = 0  # of that mail, how much was surfaced in a host whose record would
    # show it given to the model, and never did (the ladder's "seen")
    node: str | None = None  # the node it is on (this one's, or a peer's)
    address: str | None = None  # what send --to takes: NAME here, AGENT@NODE on a peer
    stale_since: str | None = None  # an agent of a peer: its link is down since then

    def without_machines(self) -> AgentInfo:
        """The agent as a remote or child agent sees it (:meth:`Session.without_machine`)."""
        return replace(self, sessions=[s.without_machine() for s in self.sessions],
                       watcher=self.watcher and self.watcher.without_machine())

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "unread": self.unread, "known_from": self.known_from,
                "online": self.online, "last_seen": self.last_seen,
                "sessions": [s.as_dict() for s in self.sessions], "wake": self.wake,
                "notify": self.notify, "gated": self.gated, "instances": self.instances,
                "gate_group": self.gate_group, "group_members": self.group_members,
                "subagent_of": self.subagent_of, "expires": self.expires,
                "expired": self.expired,
                "watcher": self.watcher.as_dict() if self.watcher else None,
                "unsurfaced": self.unsurfaced, "unsurfaced_since": self.unsurfaced_since,
                "unsurfaced_more": self.unsurfaced_more, "unseen": self.unseen,
                "node": self.node, "address": self.address or self.name,
                "stale_since": self.stale_since}


@dataclass(frozen=True)
class WhoAmI:
    """The identity in use, where it came from, and which mailbox it speaks in."""

    name: str | None  # None: no usable identity (``problem`` says why)
    source: str | None  # "--agent", "MAILSLOT_AGENT", "git"
    git_toplevel: str | None
    mailbox: str
    store: str
    problem: str | None = None
    mailbox_missing: str | None = None  # None: a mailbox is there; else what to do

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class DoctorReport:
    location: str
    problems: list[str]
    fixed: list[str]
    watcher: WatcherInfo | None = None
    deep: bool = False  # every stored file looked at (else history was left out)
    bridges: tuple[str, ...] = ()
    """One line per host with a bridge configured or running: which agents it lists."""
    routes: tuple[str, ...] = ()
    """One line per woken agent whose method picks its way at wake time: which way a
    wake would go now, and why."""
    kind: str = "files"
    """The store's kind (``files``, ``postgresql``): what the report can say it looked at."""

    @property
    def healthy(self) -> bool:
        return not self.problems


# Search and threads ---------------------------------------------------------
@dataclass(frozen=True)
class ThreadEntry:
    """One message of a thread: whole, the caller's state (``None``: the caller sent
    it) and where it stands with every recipient."""

    message: Message
    state: State | None
    status: Status

    def as_dict(self) -> dict[str, Any]:
        data = self.message.as_dict(with_body=True)
        data["state"] = self.state
        data["retracted"] = self.status.retracted
        data["recipients"] = [r.__dict__ for r in self.status.recipients]
        data["replies"] = self.status.replies
        return data
