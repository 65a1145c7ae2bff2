"""The store's roles: :class:`~mailslot.store.base.Store` cut into the small protocols it is
made of, one per concern, each held by the service modules that use it.

A backend implements every role (``Store`` is their composition, and
``tests/test_store_contract.py`` checks each role against each backend); a module that
needs one role only may ask for that role rather than the whole store. Each role's
docstring says what it holds and who uses it. Like :mod:`.base`, this module loads no
``typing`` at run time: :class:`~mailslot.core.values.Protocol` is a plain base class
there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager

from ..core.message import Message, State
from ..core.values import Protocol
from .records import AgentRecord, StoredFile, WakeEntry, Watching

TYPE_CHECKING = False  # typing is not loaded on the CLI path
if TYPE_CHECKING:  # the query language is loaded by whoever searches, not every command
    from typing import Any, Self

    from ..core.query import Search

    Event = Mapping[str, Any]
    """One line of the events log: ``{"ts": ..., "event": "delivered", "id": ..., ...}``."""


class Lifecycle(Protocol):
    """What a store is and the calls about the whole of it: where it is (``location``,
    ``address``, ``kind``, ``folder``), whether it exists yet, the clock its processes
    share, and ``init`` (create or upgrade). Used by nearly everyone: the hooks and
    :mod:`mailslot.access.identity` ask :meth:`exists`; :mod:`mailslot.mail.presence`,
    :mod:`mailslot.wake.queue` and the mailbox ask :meth:`clock`; ``mailslot init`` and
    :mod:`mailslot.keep` call :meth:`init`; a backup and a migration read ``kind`` and
    ``folder``."""

    location: str
    """Where the store is, for people (a folder path, a database address)."""

    address: str
    """Where the store is, whole: what opens it again in a child process (a database
    address with its password, if it holds one). Never shown, never an argument: only
    ever put in the environment of a helper this process starts (docs/security.md)."""

    kind: str
    """Which backend this is, as a backup's manifest names its source (``"files"``,
    ``"postgresql"``): for people and records, never a test of what the store can do."""

    folder: str | None
    """The folder that is this store, laid out as docs/format.md says (a backup's own
    layout), or ``None`` for a store that is not a folder. Restoring into an empty
    folder moves the checked backup into place whole (see :mod:`mailslot.keep.backup`)."""

    def exists(self) -> bool:
        """Is there a mailbox yet? (A hook without one stays silent.)"""

    def clock(self) -> float:
        """Now, as a Unix time, by the clock every process of this store agrees on: the
        one that decides times shared between machines (a wake's ``not_before``, a
        presence heartbeat's staleness). The file store's is this machine's own; a
        server store's is the server's, so machines whose clocks disagree still agree
        on what is due and who is online."""

    # Creating and upgrading a store -----------------------------------------------
    def init(self) -> str:
        """Create the store, or bring an older one up to date; return one line saying
        what was done. Safe to run twice, and from two machines at once."""


class Mail(Protocol):
    """Directed mail: each agent's mailbox of messages in their states (unread, read,
    done), delivered all or nothing and moved forward only. Used by
    :mod:`mailslot.service.mailbox`, :mod:`~mailslot.service.browse`,
    :mod:`~mailslot.mail.posting` (``deliver``), :mod:`~mailslot.service.delivery` (the
    hooks), :mod:`mailslot.access.gates` (strays), the wake runner (is it still unread?)
    and :mod:`mailslot.keep` (backup, export, import, migrate)."""

    def deliver(self, message: Message, recipients: Sequence[str]) -> None:
        """Make ``message`` unread for every recipient, durably, before returning.

        All or nothing; ``IdTaken`` if a recipient already has that id.
        """

    def entries(self, agent: str, states: Iterable[State]) -> list[tuple[str, State]]:
        """The ids in ``agent``'s mailbox in those states, in no particular order."""

    def load(self, agent: str, message_id: str, *, header_only: bool = False,
             state: State | None = None) -> tuple[Message, State]:
        """The message and its state for ``agent``; ``NotFound`` or ``Unreadable``.
        ``state``: a hint, where a listing just saw it (it may have moved since)."""

    def state_of(self, agent: str, message_id: str) -> State | None:
        """The state of ``message_id`` for ``agent``, or ``None`` if it has no copy."""

    def move(self, agent: str, message_id: str, to: State) -> State:
        """Move the message to ``to`` (never backwards from done); return its old state."""

    def path_of(self, agent: str, message_id: str) -> str | None:
        """Where a person finds this message, if anywhere."""

    def archive_mailbox(self, agent: str, stamp: str) -> str:
        """Set ``agent``'s whole mailbox aside, kept, out of :meth:`agent_names`; return
        where it went. Raises ``NotFound`` if it has none."""

    def agent_names(self) -> list[str]:
        """Names that have a mailbox."""

    def count_done(self, agent: str) -> int:
        """How many done messages ``agent`` holds, without listing them: done mail is
        kept forever, so this must not cost more as it grows (the file store keeps a
        tally as mail moves; PostgreSQL counts an index)."""

    def count_unread(self, agent: str, oldest: int = 0) -> tuple[int, list[str]]:
        """How many unread messages ``agent`` has, and the ``oldest`` oldest of their
        ids (sorted): what ``who`` shows, without listing a folder that has not changed
        since the last look (the file store keeps the listing of a settled folder)."""

    def correspondents(self, agent: str) -> set[str]:
        """Every sender of mail ``agent`` holds, in any state, without listing it."""

    def sent_ids(self, sender: str, limit: int | None = None) -> list[str]:
        """Ids of messages ``sender`` sent that are still held (directed mail in any
        mailbox, broadcasts standing or retracted), newest first, at most ``limit``
        (``None``: all): read from the newest end, so a page costs the same however
        much was sent before it."""


class Broadcasts(Protocol):
    """Broadcasts (one message for everyone, standing until retracted) and each
    agent's seen set (which broadcasts it has been served). Used by
    :mod:`mailslot.service.mailbox`, :mod:`~mailslot.mail.posting` (``publish``),
    :mod:`~mailslot.service.delivery` and :mod:`~mailslot.service.browse`, the front ends'
    retract, and :mod:`mailslot.keep`."""

    def publish(self, message: Message) -> None:
        """Make a broadcast standing, durably, before returning (``IdTaken`` as above)."""

    def broadcast_ids(self, *, live: bool = True) -> list[str]:
        """Ids of standing (``live``) or retracted broadcasts."""

    def load_broadcast(self, message_id: str, *, header_only: bool = False
                       ) -> tuple[Message, bool]:
        """The broadcast and whether it still stands; ``NotFound`` or ``Unreadable``."""

    def retract(self, message_id: str) -> bool:
        """Move a standing broadcast aside; ``False`` if it already was."""

    def seen(self, agent: str) -> set[str]:
        """Broadcast ids ``agent`` has been served."""

    def add_seen(self, agent: str, message_ids: Sequence[str]) -> None:
        """Record broadcasts as served to ``agent``, durably."""


class ConfigAndEvents(Protocol):
    """The config (one raw JSON object with one locked writer) and the events log
    (the receipts). The config is read by nearly every module with a setting
    (:mod:`mailslot.service.settings`, :mod:`~mailslot.service.config_edit`, the wake
    modules, :mod:`mailslot.launch.starting`); events are added by
    :mod:`mailslot.mail.posting`, :mod:`~mailslot.service.delivery` and the wake queue,
    and read by :mod:`~mailslot.service.browse`, :mod:`~mailslot.service.overview`, the
    web page and :mod:`mailslot.keep`."""

    def append_event(self, event: Event, *, durable: bool = False) -> None:
        """Add a receipt to the events log (best effort: the folders are the truth).
        ``durable``: it survives a power cut once this returns (a read's or done's
        receipt, which the caller then acknowledges)."""

    def events(self, *, newest_first: bool = False) -> Iterator[dict[str, Any]]:
        """Every readable receipt, oldest first (or newest first, so a reader looking for
        what happened to one message can stop at its delivery)."""

    def mark_once(self, key: str) -> bool:
        """Mark ``key`` (1-240 of ``a-z 0-9 . _ + - @``: a message id fits) durably;
        ``True`` only for the one caller, of every process and machine, that marked it
        first. What must happen
        once whoever races (the delivery ladder's notice to a sender) happens after it."""

    def load_config(self) -> dict[str, Any]:
        """The raw config (``{}`` when there is none); raises ``StoreError`` if unreadable."""

    def update_config(self, change: Callable[[dict[str, Any]], bool]) -> bool:
        """Read the config, let ``change`` edit it in place and, if it returns ``True``,
        save it: all under one lock, so concurrent edits never lose one another. Every
        read-modify-write of the config goes through here: it is the store's one
        config writer (a whole new config is a ``change`` that replaces the keys)."""


class Upkeep(Protocol):
    """What ``mailslot doctor`` looks at and repairs: the staging area, planted or odd
    entries, unreadable messages, the quarantine and permissions. Used by
    :mod:`mailslot.service.overview` (doctor), and :meth:`quarantine` by
    :mod:`mailslot.access.gates` too (a stray in a gated inbox is set aside)."""

    def staging(self) -> list[StoredFile]:
        """Files in the staging area: a crashed writer's leftovers if old."""

    def remove_staging(self, item: StoredFile) -> None:
        """Delete one staging file."""

    def problems(self, *, deep: bool = False) -> list[str]:
        """Planted links, odd files, owners and modes, folders that cannot be listed, an
        events log that cannot be written, counts that disagree with the mail; one line
        each, without reading messages. Bounded by what is open, not by history (done
        mail, archives), unless ``deep``: then every stored file is looked at."""

    def unreadable(self) -> list[tuple[str | None, str, str]]:
        """Every stored message that cannot be read, as ``(agent, id, why)`` (``agent``
        ``None``: a broadcast). Reads every message: slow on purpose (``doctor --deep``)."""

    def quarantine(self, agent: str | None, message_id: str) -> str:
        """Move an unreadable message aside (never delete it); return where it went."""

    def repair_counts(self) -> int:
        """Count again what the store keeps counted as mail moves (the file store's
        tallies and indexes of what each agent sent), writing what was wrong; return
        how many counts were (``doctor --fix``)."""

    def fix_permissions(self) -> int:
        """Tighten folders to 0700 and files to 0600; return how many were changed."""


class Presence(Protocol):
    """Presence records: one per running MCP server, replaced on every heartbeat. Written
    by :mod:`mailslot.mail.presence`; read by it, by :mod:`mailslot.access.fencing`,
    :mod:`mailslot.launch.starting`, the wake modules (is the agent running?) and
    :mod:`mailslot.service.overview`."""

    # Presence (running MCP servers; see mailslot.mail.presence) ----------------------
    def write_presence(self, agent: str, key: str, record: Mapping[str, Any]) -> None:
        """Replace ``agent``'s presence record ``key`` atomically (announce or heartbeat)."""

    def presence(self) -> list[dict[str, Any]]:
        """Every readable presence record of every agent, each with its ``agent`` and ``key``."""

    def remove_presence(self, agent: str, key: str) -> None:
        """Forget one presence record (gone already is fine)."""


class WakeQueues(Protocol):
    """The wake queue and the notifier queues (the same queue, one per lane): entries
    queued, claimed by one watcher, released or retried, under a per-agent lock. Used by
    :mod:`mailslot.wake.queue` (enqueue), :mod:`mailslot.wake.runner` (claim, release,
    orphans), :mod:`mailslot.wake.notify` and :mod:`mailslot.wake.notify_queue`
    (``notify_queue``), and :mod:`mailslot.keep.transfer`."""

    # Wake queue (rules in mailslot.wake) ---------------------------------
    def wake_enqueue(self, entry: WakeEntry) -> bool:
        """Queue a wake durably; ``False`` if one is already queued for that message."""

    def wake_agents(self) -> list[str]:
        """Agents with queued or claimed wakes."""

    def queued_agents(self) -> dict[str, list[str]]:
        """:meth:`wake_agents` of every queue at once, by queue name (``wake``,
        ``notify-N``), queues with nothing left out: a watcher's one look at all of
        them (a database answers in one query, not one per queue)."""

    def wake_pending(self, agent: str) -> list[WakeEntry]:
        """The wakes queued for ``agent`` (claimed ones excluded), in no particular order."""

    def wake_claim(self, entry: WakeEntry) -> WakeEntry | None:
        """Take a queued wake atomically; ``None`` if another process took it first."""

    def wake_release(self, claimed: WakeEntry, retry: WakeEntry | None = None) -> None:
        """End a claim: queue ``retry`` first (if given), then drop the claim."""

    def wake_lock(self, agent: str) -> AbstractContextManager[bool]:
        """Hold ``agent``'s wake lock (yields ``False`` if another holder has it).

        Held while claiming and waking, released by the system if the holder dies, so
        a claim found while holding the lock was left by a holder that stopped.
        """

    def wake_orphans(self, agent: str) -> list[WakeEntry]:
        """Claims for ``agent``: call only while holding its lock (then all are orphans)."""

    # Notifier queues --------------------------------------------------------
    def notify_queue(self, lane: int) -> Self:
        """This store, with its ``wake_*`` methods acting on notifier queue ``lane``
        (one per place in an agent's ``notify`` list, ``0 <= lane < NOTIFY_QUEUES``)
        instead of the wake queue; another ``lane`` is :class:`UnsafePath`.

        Everything else is shared, so the one queue-and-runner machinery serves wakes and
        notifiers alike; queues never share entries, claims or locks. ``watch(wakes=True)``
        on this store kicks for every queue.
        """


class Sessions(Protocol):
    """Per-session delivery state: what each host session was shown, the host sessions
    the hooks ran in, mail for one session (``name@session``), each agent's latest session
    per host, the checkout that claimed an agent, and hosts' background waiters. Used by
    :mod:`mailslot.service.delivery` (the session hooks), :mod:`mailslot.access.instances`
    and :mod:`~mailslot.access.fencing` (hook sessions), :mod:`mailslot.mail.posting`
    (``add_instance_mail``), the wake methods (latest session, waiters) and
    :mod:`mailslot.keep.transfer`."""

    # Per-session delivery state (the session hooks; rules in mailslot.service.delivery) ------
    def shown(self, agent: str, session: str) -> set[str]:
        """Ids this session of ``agent`` has been shown."""

    def shown_at(self, agent: str, session: str) -> float | None:
        """When this session was last shown (or told of) anything; ``None``: never."""

    def add_shown(self, agent: str, session: str, message_ids: Sequence[str]) -> None:
        """Record what a session was shown (best effort: losing it shows mail again)."""

    def prune_sessions(self, agent: str, older_than: float) -> None:
        """Forget sessions (what they were shown, their waiters, their hook session
        records) untouched for ``older_than`` seconds."""

    def refresh_hook_session(self, agent: str, session: str) -> bool:
        """Mark ``agent``'s host session ``session`` (a session key) as seen by a hook
        now; ``False`` (nothing written) if it has no record yet. Every hook
        call does this, so it must be cheap: one ``utime`` in the file store."""

    def record_hook_session(self, agent: str, session: str, facts: Mapping[str, Any]
                            ) -> None:
        """Write (or replace) the record of ``agent``'s host session ``session``: its
        ``facts`` (host, folder, host pid...), seen now."""

    def add_instance_mail(self, agent: str, message_id: str, session: str) -> None:
        """Record, durably and before the delivery, that ``agent``'s message
        ``message_id`` is for its one session ``session`` (``name@session``):
        an index, so a hook parses only such mail; the message's header stays the
        truth. Forgotten by :meth:`prune_sessions` like a session."""

    def instance_mail(self, agent: str) -> dict[str, str]:
        """``agent``'s mail recorded by :meth:`add_instance_mail`: id -> session. Cheap
        when there is none (every hook call asks)."""

    def hook_sessions(self) -> list[dict[str, Any]]:
        """Every readable hook session of every agent: its facts with ``agent``,
        ``session`` and ``seen`` (when a hook last ran in it, seconds since the epoch by
        this machine's clock)."""

    def set_latest_session(self, agent: str, host: str, session: str) -> None:
        """Record ``session`` (the host's own id) as ``agent``'s latest in ``host``, for
        wakes that name "latest" rather than a pasted id."""

    def latest_session(self, agent: str, host: str) -> str | None:
        """The id :meth:`set_latest_session` last recorded, if any."""

    # Claims (the checkout that first read as an agent) ---------------------------------
    def claim(self, agent: str, path: str) -> str:
        """The checkout that claimed ``agent`` first; ``path`` if nobody had yet."""

    def replace_claim(self, agent: str, path: str) -> None:
        """Give ``agent``'s claim to ``path`` (the old checkout is gone)."""

    # Waiters (a host's background rewake hook) -----------------------------------------
    def set_waiter(self, agent: str, session: str, pid: int) -> None:
        """Make ``pid`` the session's one waiter, replacing any older one."""

    def waiter(self, agent: str, session: str) -> int | None:
        """The pid of the session's current waiter, if one was recorded."""

    def waiter_pids(self, agent: str) -> list[int]:
        """The pids recorded by ``agent``'s waiters (some may have ended)."""


class Registry(Protocol):
    """Registered agents: one record each (parent, generation, the hash of its
    credential's secret, revoked). Used by :mod:`mailslot.access.authority` (register,
    rotate, revoke, verify) and :mod:`~mailslot.frontends.http.bearer`, ``mailslot launch`` and
    install (who is registered), and :mod:`mailslot.keep` (backup, migrate)."""

    # Registered agents (rules in mailslot.access.authority) ------------------------
    def register_agent(self, record: AgentRecord) -> bool:
        """Add ``record`` durably; ``False`` (nothing written) if ``record.name`` is
        registered already, revoked or not."""

    def registered(self, name: str) -> AgentRecord | None:
        """The record of ``name``, or ``None`` if it was never registered."""

    def registered_agents(self) -> list[AgentRecord]:
        """Every readable record, sorted by name."""

    def replace_registered(self, record: AgentRecord) -> None:
        """Replace the record of ``record.name`` atomically (rotate, revoke); ``NotFound``
        if it was never registered."""


class Gates(Protocol):
    """Gated inboxes: each agent's accept setting, its members, open access requests and
    the ids let through its gate. Used by :mod:`mailslot.access.gates`,
    :mod:`mailslot.mail.posting` and :mod:`~mailslot.service.delivery` (``accept_of``,
    ``add_passed``), :mod:`~mailslot.service.overview`, the CLI (members) and
    :mod:`mailslot.keep` (import, migrate)."""

    # Gates (who may write to a gated inbox; rules in mailslot.access.gates) -----------
    def set_accept(self, agent: str, accept: str) -> None:
        """Open (``"open"``) or gate (``"members"``, or ``"group:GROUP"`` for a group
        gate) ``agent``'s inbox, durably."""

    def accept_of(self, agent: str) -> str:
        """``"open"`` (also when never set), ``"members"`` or ``"group:GROUP"``; a gate
        setting that cannot be read is ``"members"`` (it stays shut).

        The member and request methods below take an agent's name or a group's key
        ``+GROUP`` (a group gate's members and requests are shared)."""

    def gated(self) -> dict[str, str]:
        """Every agent whose inbox is not open, by name, with its setting (``members``
        or ``group:GROUP``): whether it has a mailbox yet or not."""

    def set_member(self, agent: str, member: str, admitted: bool) -> bool:
        """Admit ``member`` to ``agent``'s members (or remove it); ``False`` if nothing
        changed."""

    def members(self, agent: str) -> list[str]:
        """``agent``'s admitted members, sorted."""

    def set_request(self, agent: str, requester: str, message_id: str | None) -> None:
        """Record ``requester``'s open access request to ``agent`` (the id of the message
        carrying it), or with ``None`` close it (gone already is fine)."""

    def requests(self, agent: str) -> dict[str, str]:
        """Open access requests to ``agent``: requester -> request message id."""

    def add_passed(self, agent: str, message_ids: Sequence[str]) -> None:
        """Record, durably, that the service let these messages through ``agent``'s gate
        (written before the delivery, so a reader never sees one unrecorded)."""

    def passed(self, agent: str) -> set[str]:
        """Ids the service let through ``agent``'s gate (see :meth:`add_passed`)."""


class Fences(Protocol):
    """Replaced sessions: which session of an agent replaced which (once, never undone).
    Used by :mod:`mailslot.access.fencing` only."""

    # Fenced sessions (rules in mailslot.access.fencing) ------------------------------
    def fence(self, agent: str, session: str, by: str) -> None:
        """Mark ``agent``'s ``session`` replaced by session ``by``, durably (once: a
        second fence of the same session keeps the first)."""

    def fenced_by(self, agent: str, session: str) -> str | None:
        """The session that replaced ``session``, or ``None``."""


class Limits(Protocol):
    """The loop governor's token buckets: for each key (``sends.A``, ``sends.A.B``,
    ``wakes.B.A``: each its sender A's own) how many tokens it held and when, by
    :meth:`~Lifecycle.clock`. A bucket not stored is full. Used by
    :mod:`mailslot.mail.governor` only, which holds every rule."""

    # Token buckets (rules in mailslot.mail.governor) ----------------------------------
    def update_buckets(self, keys: Sequence[str],
                       change: Callable[[dict[str, tuple[float, float]]], bool]) -> bool:
        """Read the buckets of ``keys`` (those stored, as ``(tokens, at)``), let
        ``change`` edit that dict in place, and save it if it says it changed: a key
        left in the dict is written, a key of ``keys`` taken out of it is removed. All
        under one lock (a row lock on PostgreSQL), so two senders at once each see the
        other's take. Keys are ``[a-z0-9.-]``, at most 200 characters."""

    def bucket_group(self, group: str) -> dict[str, tuple[float, float]]:
        """Every stored bucket below ``group`` (``wakes.B``: each ``wakes.B.A``), as
        ``(tokens, at)``: a reading, changing nothing and locking no other sender's
        bucket (so it may be a take behind). ``group`` is two parts of a key."""


class SessionLog(Protocol):
    """The private log of sessions mailslot started, and the lock starts hold while they
    count. Used by :mod:`mailslot.launch.starting`, :mod:`mailslot.launch.restart`, the CLI
    and :mod:`mailslot.keep.transfer`."""

    # The session log (sessions started by mailslot; rules in mailslot.launch.starting) --
    def log_session(self, record: Mapping[str, Any]) -> None:
        """Add one started (or failed) session to the private session log, durably."""

    def started_sessions(self) -> list[dict[str, Any]]:
        """Every readable record of the session log, oldest first."""

    def launch_lock(self) -> AbstractContextManager[None]:
        """Hold the lock of starting sessions, waiting for it while another holder has
        it (another thread, process or machine of this store), released by the system if
        the holder dies: a start holds it while it counts the sessions running, starts
        its own and logs it, so starts at the same time count one another."""


class Searching(Protocol):
    """Search over every delivered and published message (a derived index; the stored
    messages stay the truth). Used by :mod:`mailslot.keep.finding`, the CLI, the MCP tools,
    the web page and the wake prompt."""

    # Search (a derived index; the stored messages stay the truth) ------------
    def search(self, request: Search) -> list[str]:
        """Ids of the messages ``request`` finds (see :class:`mailslot.core.query.Search`): best
        first when it has words to match, else oldest first; at most ``limit`` after
        ``offset``. Covers every message delivered through :meth:`deliver` or
        :meth:`publish`; which of them a caller may see is the service's rule. A message
        is found by its subject and body, by whole words, phrases and prefixes."""

    def reindex(self) -> int:
        """Build the search index again from the stored messages; return how many it
        holds (a backend whose search needs no separate index just counts them)."""

    def catch_up_index(self, seconds: float | None) -> int:
        """Index mail delivered since, for at most about ``seconds`` (``None``: to the
        end); return how many messages a search would still not cover. A search does
        this itself for a moment; a watcher does it in the background. A backend that
        indexes at delivery returns 0 at once."""

    def unsearched(self) -> int:
        """How many delivered messages a search does not cover yet (the newest; 0 for a
        backend that indexes at delivery)."""


class Archives(Protocol):
    """Retention: done mail older than a cutoff kept in compressed month archives, still
    searchable, and moved back on request. Used by :mod:`mailslot.keep.archiving` (the
    owner's rule), :mod:`mailslot.keep.finding` and the service's look-ups."""

    # Month archives of done mail -----------------------------------------------------
    def archive_done(self, before: str, *, dry_run: bool = False) -> dict[str, int]:
        """Move every done message whose id is older than ``before`` (an id's time
        prefix, ``YYYY-MM-DD_HHMMSS``) into its month's archive; how many message
        copies per month were (``dry_run``: would be) moved. Never touches unread or
        read mail; safe to run again after a crash (it finishes the job)."""

    def restore_archived(self, months: list[str] | None = None) -> dict[str, int]:
        """Move the archived mail of ``months`` (``YYYY-MM``; ``None``: all) back into
        the done folders; how many copies per month. ``NotFound`` for a month with no
        archive (nothing is moved then)."""

    def archive_months(self) -> dict[str, int]:
        """Each archived month and how many message copies it holds."""

    def archived(self, message_id: str) -> list[tuple[str, Message]]:
        """Every archived copy of ``message_id``, as ``(recipient, message)``."""

    def archived_ids(self, agent: str | None = None) -> list[str]:
        """Every archived message's id (``agent``: of its copies only), each once,
        oldest first (export, backup, and short ids of archived mail)."""


class Watches(Protocol):
    """Being told that something may have changed, so a waiting reader need not poll:
    mail for one agent, a waiter, the wake queues (``watch``) or every mailbox
    (``watch_mail``). Used by :mod:`mailslot.frontends.hooks.wait`,
    :mod:`mailslot.frontends.mcp.channel`, :mod:`mailslot.service.arrivals`,
    :mod:`mailslot.frontends.watcher` and :mod:`mailslot.frontends.web.live`."""

    # Watching ------------------------------------------------------------------------
    def watch(self, kick: Callable[[], None], *, mail_for: str | None = None,
              waiters_of: str | None = None,
              wakes: bool | Callable[[str], bool] = False) -> Watching | None:
        """Call ``kick`` (from another thread) whenever mail may have arrived for
        ``mail_for``, a waiter of ``waiters_of`` changed, or (``wakes``) a wake was
        queued: for any agent, or, ``wakes`` a test of an agent's name, for the agents
        it accepts (a store that cannot tell whose wake it is kicks for every one).
        ``None``: this store cannot tell; the caller polls instead.

        A kick only means "look again"; it may come without a change, and changes may
        share one kick. The file store uses file-system events; a server store would
        use its notifications (PostgreSQL's LISTEN/NOTIFY).
        """

    # The web page's live view ------------------------------------------------
    def watch_mail(self, kick: Callable[[], None]) -> Watching | None:
        """Call ``kick`` (from another thread) whenever any mailbox or broadcast may have
        changed: a delivery, a state change, a broadcast published or retracted. ``None``:
        this store cannot tell; the caller polls. A kick only means "look again", and one
        may be missed for a change inside a mailbox made a moment before (the file store's
        watch of a new folder starts after the folder does), so a caller also looks again
        every few seconds."""


ROLES = (Lifecycle, Mail, Broadcasts, ConfigAndEvents, Upkeep, Presence, WakeQueues, Sessions,
         Registry, Gates, Fences, Limits, SessionLog, Searching, Archives, Watches)
"""Every role, in the order :class:`~mailslot.store.base.Store` lists them."""
