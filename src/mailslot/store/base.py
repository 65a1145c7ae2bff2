"""The store: every method a caller uses, built on the few a backend writes.

A store knows where messages are and moves them; it holds no rule about who may do
what (that is :class:`mailslot.service.mailbox.Mailbox` and its features). Every method
is safe to call from many processes at once: a state change another process already
made is success, not an error.

:class:`Store` is built the way CPython's :mod:`mailbox` builds ``Mailbox``: a backend
writes the primitives of :mod:`.primitives` (the store itself, mail, broadcasts, the
logs, keyed records in the namespaces of :mod:`.namespaces`, watching) and inherits
every method here, each a default written once over the primitives, grouped by the
roles of :mod:`.roles` (:class:`Fallbacks` holds those a backend may answer faster,
:class:`Store` the rest); a backend overrides one only for speed (the file store's counts
kept as mail moves, PostgreSQL's indexes and full-text search) or to report what it
keeps beyond the primitives (the file store's staging area, its month archives). The
contract every backend keeps is in :mod:`.primitives`; ``tests/test_store_contract.py``
checks it for every backend (files, PostgreSQL and memory).

On the hook path (every backend is built on it): two classes, loading nothing but
mailslot's foundation; type checkers see them built on
:class:`~.primitives.Primitives`.
"""

from __future__ import annotations

import time

from ..core.errors import NotFound, StoreError, Unreadable, UnsafePath
from ..core.ids import is_id, sender_of
from ..core.message import STATES
from ..core.names import SESSION_KEY, is_accept, is_valid_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping, Sequence
    from contextlib import AbstractContextManager
    from typing import Any

    from ..core.message import Message, State
    from ..core.query import Search
    from .primitives import Primitives as _Base
    from .records import AgentRecord, StoredFile

    Event = Mapping[str, Any]
    """One line of the events log: ``{"ts": ..., "event": "delivered", "id": ..., ...}``."""
else:
    _Base = object


class Fallbacks(_Base):
    """What a backend may answer faster than these defaults, which read through the
    primitives: what is known of mail without reading it, what ``doctor`` looks at,
    search and the month archives (the file store's kept counts and index, PostgreSQL's
    indexes and ``tsvector``)."""

    _no_archive = ("archive is for the file store: this store keeps done mail where it is, "
                   "searchable; nothing was changed")
    """Why :meth:`archive_done` refuses (a backend keeping archives overrides it)."""


    # What is known of mail without reading it (done mail is kept forever: a backend
    # answers these without listing it; the defaults list) ----------------------------
    def state_of(self, agent: str, message_id: str) -> State | None:
        """The state of ``message_id`` for ``agent``, or ``None`` if it has no copy."""
        return next((s for i, s in self.entries(agent, STATES) if i == message_id), None)

    def path_of(self, agent: str, message_id: str) -> str | None:
        """Where a person finds this message, if anywhere."""
        if self.state_of(agent, message_id) is None:
            return None
        return f"{self.location}#{agent}/{message_id}"

    def count_done(self, agent: str) -> int:
        """How many done messages ``agent`` holds."""
        return len(self.entries(agent, ("done",)))

    def count_unread(self, agent: str, oldest: int = 0) -> tuple[int, list[str]]:
        """How many unread messages ``agent`` has, and the ``oldest`` oldest ids."""
        ids = sorted(i for i, _ in self.entries(agent, ("unread",)))
        return len(ids), ids[:oldest]

    def correspondents(self, agent: str) -> set[str]:
        """Every sender of mail ``agent`` holds, in any state."""
        return {sender_of(i) for i, _ in self.entries(agent, STATES)}

    def sent_ids(self, sender: str, limit: int | None = None) -> list[str]:
        """Ids of messages ``sender`` sent that are still held (directed mail in any
        mailbox, broadcasts standing or retracted), newest first, at most ``limit``."""
        held = {i for a in self.agent_names() for i, _ in self.entries(a, STATES)}
        held.update(i for live in (True, False) for i in self.broadcast_ids(live=live))
        newest = sorted((i for i in held if sender_of(i) == sender), reverse=True)
        return newest if limit is None else newest[:limit]

    # What doctor looks at (a store with nothing staged or counted keeps these) ------
    def staging(self) -> list[StoredFile]:
        """Files in the staging area: a crashed writer's leftovers if old."""
        return []

    def remove_staging(self, item: StoredFile) -> None:
        """Delete one staging file."""

    def problems(self, *, deep: bool = False) -> list[str]:
        """What is wrong with the store itself, one line each, bounded by what is open
        unless ``deep``."""
        return []

    def repair_counts(self) -> int:
        """Count again what the store keeps counted; how many counts were wrong."""
        return 0

    def fix_permissions(self) -> int:
        """Tighten what others could reach; how many were changed."""
        return 0

    def unreadable(self) -> list[tuple[str | None, str, str]]:
        """Every stored message that cannot be read, as ``(agent, id, why)`` (``agent``
        ``None``: a broadcast); one set aside as it was read is not listed again."""
        found: list[tuple[str | None, str, str]] = []

        def check(agent: str | None, message_id: str, read: Callable[[], object]) -> None:
            try:
                read()
            except (Unreadable, UnsafePath) as exc:
                if not getattr(exc, "set_aside", False):
                    found.append((agent, message_id, str(exc)))
            except NotFound:
                return  # moved meanwhile

        for agent in self.agent_names():
            for state in STATES:
                try:
                    listed = self.entries(agent, [state])
                except UnsafePath:
                    continue  # a planted folder: problems() names it
                for message_id, _ in listed:
                    check(agent, message_id,
                          lambda a=agent, i=message_id: self.load(a, i))  # type: ignore[misc]
        for live in (True, False):
            for message_id in self.broadcast_ids(live=live):
                check(None, message_id,
                      lambda i=message_id: self.load_broadcast(i))  # type: ignore[misc]
        return found

    # Search (the default reads every message; an index overrides all four) ---------
    def search(self, request: Search) -> list[str]:
        """Ids of the messages ``request`` finds: best first when it has words to
        match, else oldest first; at most ``limit`` after ``offset``."""
        from .scan import search

        return search(self, request)

    def reindex(self) -> int:
        """Build the search index again; how many messages it holds."""
        from .scan import every_message

        return len(list(every_message(self)))

    def catch_up_index(self, seconds: float | None) -> int:
        """Index what was delivered since; how many a search would still not cover."""
        return 0

    def unsearched(self) -> int:
        """How many delivered messages a search does not cover yet."""
        return 0

    # Month archives of done mail (the file store's; elsewhere it stays put) --------
    def archive_done(self, before: str, *, dry_run: bool = False) -> dict[str, int]:
        """Move done mail older than ``before`` into its month's archive, per month."""
        raise StoreError(self._no_archive)

    def restore_archived(self, months: list[str] | None = None) -> dict[str, int]:
        """Move the archived mail of ``months`` back into the done folders."""
        raise StoreError(self._no_archive)

    def archive_months(self) -> dict[str, int]:
        """Each archived month and how many message copies it holds."""
        return {}

    def archived(self, message_id: str) -> list[tuple[str, Message]]:
        """Every archived copy of ``message_id``, as ``(recipient, message)``."""
        return []

    def archived_ids(self, agent: str | None = None) -> list[str]:
        """Every archived message's id (``agent``: of its copies only), oldest first."""
        return []



class Store(Fallbacks):
    """Where messages, broadcasts and every record of the namespaces live: the
    primitives a backend writes, and every method built on them. Those of this class
    read and write the namespaces of keyed records, the same for every backend."""


    # Broadcasts served: each agent's seen set ---------------------------------------
    def seen(self, agent: str) -> set[str]:
        """Broadcast ids ``agent`` has been served."""
        return self.get("seen", (agent,))  # type: ignore[no-any-return]

    def add_seen(self, agent: str, message_ids: Sequence[str]) -> None:
        """Record broadcasts as served to ``agent``, durably."""
        if message_ids:
            self.add("seen", (agent,), message_ids)

    # The config (one locked writer), the events log, keys marked once ---------------
    def load_config(self) -> dict[str, Any]:
        """The raw config (``{}`` when there is none); ``StoreError`` if unreadable."""
        return self.get("config", ()) or {}

    def update_config(self, change: Callable[[dict[str, Any]], bool]) -> bool:
        """Read the config, let ``change`` edit it in place and save it if it returns
        ``True``, all under one lock: the store's one config writer."""
        return self.update("config", [()], lambda held: change(held.setdefault((), {})))

    def append_event(self, event: Event, *, durable: bool = False) -> None:
        """Add a receipt to the events log (best effort: the folders are the truth)."""
        self.append_log("events", event, durable=durable)

    def events(self, *, newest_first: bool = False) -> Iterator[dict[str, Any]]:
        """Every readable receipt, oldest first (or newest first)."""
        return self.read_log("events", newest_first=newest_first)

    def mark_once(self, key: str) -> bool:
        """Mark ``key`` durably; ``True`` only for the one caller, of every process and
        machine, that marked it first."""
        return self.add("once", (key,), "")

    # The log of sessions mailslot started, and the launch lock ----------------------
    def log_session(self, record: Mapping[str, Any]) -> None:
        """Add one started (or failed) session to the session log, durably."""
        self.append_log("sessions", record, durable=True)

    def started_sessions(self) -> list[dict[str, Any]]:
        """Every readable record of the session log, oldest first."""
        return list(self.read_log("sessions"))

    def launch_lock(self) -> AbstractContextManager[bool]:
        """Hold the lock of starting sessions, waiting for it (another thread, process
        or machine of this store holds it meanwhile)."""
        return self.lock("launch", ())

    # Presence: one record per running MCP server ------------------------------------
    def write_presence(self, agent: str, key: str, record: Mapping[str, Any]) -> None:
        """Replace ``agent``'s presence record ``key`` atomically."""
        self.put("presence", (agent, key), dict(record))

    def presence(self) -> list[dict[str, Any]]:
        """Every readable presence record, each with its ``agent`` and ``key``."""
        return [{**record, "agent": agent, "key": key}
                for (agent, key), record in self.items("presence").items()
                if isinstance(record, dict)]

    def remove_presence(self, agent: str, key: str) -> None:
        """Forget one presence record (gone already is fine)."""
        self.delete("presence", (agent, key))

    # Per-session delivery state: shown, hook sessions, mail for one session, latest
    # sessions, claims, waiters ------------------------------------------------------
    def shown(self, agent: str, session: str) -> set[str]:
        """Ids this session of ``agent`` has been shown."""
        return self.get("shown", (agent, session))  # type: ignore[no-any-return]

    def shown_at(self, agent: str, session: str) -> float | None:
        """When this session was last shown (or told of) anything; ``None``: never."""
        return self.touched("shown", (agent, session)).get((agent, session))

    def add_shown(self, agent: str, session: str, message_ids: Sequence[str]) -> None:
        """Record what a session was shown (best effort: losing it shows mail again)."""
        if message_ids:
            self.add("shown", (agent, session), message_ids)

    def prune_sessions(self, agent: str, older_than: float) -> None:
        """Forget ``agent``'s sessions (what they were shown, their showings awaiting the
        host's record, their waiters, their hook session records, their mail for one
        session) untouched for ``older_than`` seconds."""
        limit = time.time() - older_than
        for space in ("shown", "marks", "waiters", "hook-sessions", "instances"):
            for key, at in self.touched(space, (agent,)).items():
                if at < limit:
                    self.delete(space, key)

    def refresh_hook_session(self, agent: str, session: str) -> bool:
        """Mark ``agent``'s host session as seen by a hook now; ``False`` (nothing
        written) if it has no record yet."""
        return self.touch("hook-sessions", (agent, session))

    def record_hook_session(self, agent: str, session: str, facts: Mapping[str, Any]
                            ) -> None:
        """Write (or replace) the record of a host session: its ``facts``, seen now."""
        self.put("hook-sessions", (agent, session), dict(facts))

    def hook_sessions(self) -> list[dict[str, Any]]:
        """Every readable hook session: its facts with ``agent``, ``session`` and
        ``seen`` (when a hook last ran in it, by this machine's clock)."""
        seen = self.touched("hook-sessions")
        return [{**facts, "agent": key[0], "session": key[1], "seen": seen[key]}
                for key, facts in self.items("hook-sessions").items()
                if isinstance(facts, dict) and key in seen]

    def add_instance_mail(self, agent: str, message_id: str, session: str) -> None:
        """Record, durably and before the delivery, that ``message_id`` is for
        ``agent``'s one session ``session`` (an index; the header stays the truth)."""
        if not SESSION_KEY.fullmatch(session):
            raise UnsafePath(f"mail {message_id!r} for {session!r} is not safe to record")
        self.add("instances", (agent, message_id), session)

    def instance_mail(self, agent: str) -> dict[str, str]:
        """``agent``'s mail for one session: id -> session."""
        return {key[1]: session for key, session in self.items("instances", (agent,)).items()}

    def set_latest_session(self, agent: str, host: str, session: str) -> None:
        """Record ``session`` (the host's own id) as ``agent``'s latest in ``host``."""
        if not SESSION_KEY.fullmatch(session):
            raise UnsafePath(f"session {session!r} of {host!r} is not safe to record")
        self.put("latest", (agent, host), session)

    def latest_session(self, agent: str, host: str) -> str | None:
        """The id :meth:`set_latest_session` last recorded, if it is still a safe one
        (it becomes an argument of a wake)."""
        value = self.get("latest", (agent, host))
        return value if isinstance(value, str) and SESSION_KEY.fullmatch(value) else None

    def claim(self, agent: str, path: str) -> str:
        """The checkout that claimed ``agent`` first; ``path`` if nobody had yet."""
        if self.add("claims", (agent,), path):
            return path
        held = self.get("claims", (agent,))
        return path if held is None else str(held)

    def replace_claim(self, agent: str, path: str) -> None:
        """Give ``agent``'s claim to ``path`` (the old checkout is gone)."""
        self.put("claims", (agent,), path)

    def set_waiter(self, agent: str, session: str, pid: int) -> None:
        """Make ``pid`` the session's one waiter, replacing any older one."""
        self.put("waiters", (agent, session), pid)

    def waiter(self, agent: str, session: str) -> int | None:
        """The pid of the session's current waiter, if one was recorded."""
        pid = self.get("waiters", (agent, session))
        return pid if isinstance(pid, int) else None

    def waiter_pids(self, agent: str) -> list[int]:
        """The pids recorded by ``agent``'s waiters (some may have ended)."""
        return [p for p in self.items("waiters", (agent,)).values() if isinstance(p, int)]

    # The queues at a glance (their rules: mailslot.wake.claims) ---------------------
    def queued_agents(self) -> dict[str, list[str]]:
        """The agents with queued or claimed entries, by queue (``wake``,
        ``notify-N``), queues holding nothing left out: a watcher's one look."""
        found: dict[str, set[str]] = {}
        for space in ("wake", "wake.claimed"):
            for key in self.keys(space):
                found.setdefault(key[0], set()).add(key[1])
        return {queue: sorted(agents) for queue, agents in sorted(found.items())}

    # Registered agents (rules: mailslot.access.authority) ---------------------------
    def register_agent(self, record: AgentRecord) -> bool:
        """Add ``record`` durably; ``False`` (nothing written) if the name is taken."""
        return self.add("registry", (record.name,), record)

    def registered(self, name: str) -> AgentRecord | None:
        """The record of ``name``, or ``None`` if it was never registered."""
        return self.get("registry", (name,))  # type: ignore[no-any-return]

    def registered_agents(self) -> list[AgentRecord]:
        """Every readable record, sorted by name."""
        return list(self.items("registry").values())

    def replace_registered(self, record: AgentRecord) -> None:
        """Replace the record of ``record.name`` (rotate, revoke); ``NotFound`` if it
        was never registered."""
        self.put("registry", (record.name,), record)

    # Gated inboxes (who passes: mailslot.access.gates); members and requests take an
    # agent's name or a group's key +GROUP --------------------------------------------
    def set_accept(self, agent: str, accept: str) -> None:
        """Open (``"open"``) or gate (``"members"``, ``"group:GROUP"``) an inbox."""
        if accept == "open":
            self.delete("accept", (agent,))
        else:
            self.put("accept", (agent,), accept)

    def accept_of(self, agent: str) -> str:
        """``"open"`` (also when never set), ``"members"`` or ``"group:GROUP"``; a
        setting that cannot be read is ``"members"`` (the gate stays shut)."""
        value = self.get("accept", (agent,))
        return "open" if value is None else value if is_accept(value) else "members"

    def gated(self) -> dict[str, str]:
        """Every agent whose inbox is not open, with its setting, mailbox or not."""
        return {key[0]: value if is_accept(value) else "members"
                for key, value in self.items("accept").items()
                if is_valid_name(key[0]) and value != "open"}

    def set_member(self, agent: str, member: str, admitted: bool) -> bool:
        """Admit ``member`` (or remove it); ``False`` if nothing changed."""
        if admitted:
            return self.add("members", (agent, member), "")
        return self.delete("members", (agent, member))

    def members(self, agent: str) -> list[str]:
        """``agent``'s admitted members, sorted."""
        return [key[1] for key in self.keys("members", (agent,))]

    def set_request(self, agent: str, requester: str, message_id: str | None) -> None:
        """Record ``requester``'s open request (the message carrying it), or with
        ``None`` close it (gone already is fine)."""
        if message_id is None:
            self.delete("requests", (agent, requester))
        else:
            self.put("requests", (agent, requester), message_id)

    def requests(self, agent: str) -> dict[str, str]:
        """Open access requests to ``agent``: requester -> request message id."""
        return {key[1]: found for key, found in self.items("requests", (agent,)).items()
                if isinstance(found, str) and is_id(found)}

    def add_passed(self, agent: str, message_ids: Sequence[str]) -> None:
        """Record, durably and before the delivery, that these passed the gate."""
        if message_ids:
            self.add("passed", (agent,), message_ids)

    def passed(self, agent: str) -> set[str]:
        """Ids the service let through ``agent``'s gate."""
        return self.get("passed", (agent,))  # type: ignore[no-any-return]

    # Replaced sessions (rules: mailslot.access.fencing) -----------------------------
    def fence(self, agent: str, session: str, by: str) -> None:
        """Mark ``session`` replaced by ``by``, durably; a second fence keeps the first."""
        self.add("fences", (agent, session), by)

    def fenced_by(self, agent: str, session: str) -> str | None:
        """The session that replaced ``session``, or ``None``."""
        return self.get("fences", (agent, session))  # type: ignore[no-any-return]

    # The governor's token buckets (rules: mailslot.mail.governor) -------------------
    def update_buckets(self, keys: Sequence[str],
                       change: Callable[[dict[str, tuple[float, float]]], bool]) -> bool:
        """Read the stored buckets of ``keys``, let ``change`` edit them, save them
        (a key taken out is removed), all under one lock."""
        def named(held: dict[tuple[str, ...], Any]) -> bool:
            buckets = {".".join(key): value for key, value in held.items()}
            if not change(buckets):
                return False
            held.clear()
            held.update((_bucket(key), value) for key, value in buckets.items())
            return True
        return self.update("limits", [_bucket(key) for key in keys], named)

    def bucket_group(self, group: str) -> dict[str, tuple[float, float]]:
        """Every stored bucket below ``group`` (``wakes.B``: each ``wakes.B.A``), read
        without locking any."""
        parts = _bucket(group)
        if len(parts) != 2:
            raise UnsafePath(f"bucket group {group!r} is not two parts of a key")
        return {".".join(key): value for key, value in self.items("limits", parts).items()
                if len(key) > 2}



def _bucket(key: str) -> tuple[str, ...]:
    if not isinstance(key, str):
        raise UnsafePath(f"bucket {key!r} is not a name")
    return tuple(key.split("."))
