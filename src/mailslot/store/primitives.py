"""What a backend writes: the store's primitives, and the contract each keeps.

A backend implements these and nothing else; :class:`~mailslot.store.base.Store` builds
every other method on them (:mod:`.roles`), and a backend may override one of those for
speed (the file store's kept counts, PostgreSQL's indexes and its own search). The
primitives come in six groups, each a protocol here: the store itself
(:class:`Lifecycle`), directed mail (:class:`Mail`), broadcasts (:class:`Broadcasts`),
the append-only logs (:class:`Logs`), keyed records in named namespaces
(:class:`Records`, the namespaces in :mod:`.namespaces`) and watching
(:class:`Watches`). ``tests/test_store_contract.py`` holds every backend to them.

Read by type checkers and tests only (like :mod:`typing`'s protocols, these are plain
classes at run time): the hook path never loads this module.

The contract every primitive keeps:

* every failure is a :class:`~mailslot.core.errors.MailslotError`: ``NotFound``,
  ``IdTaken`` (nothing written), ``Unreadable`` (one stored message or record cannot be
  read; listings skip it), ``UnsafePath`` (something planted, or a key that is no safe
  name) or ``StoreError`` (one line naming the place and what to do). No ``OSError``
  leaves a store;
* every call is safe from many processes (and machines) at once: a change another
  process already made is success, not an error;
* a delivery is all or nothing, and a message is the id it is stored under.
"""

from __future__ import annotations

from typing import Protocol

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
    from contextlib import AbstractContextManager
    from typing import Any

    from ..core.message import Message, State
    from .records import Watching

    Key = tuple[str, ...]


class Lifecycle(Protocol):
    """The store itself: where it is, whether it exists, its clock, ``init``."""

    location: str
    """Where the store is, for people (a folder path, a database address)."""

    address: str
    """Where the store is, whole: what opens it again in a child process (a database
    address with its password, if it holds one). Never shown, never an argument: only
    ever put in the environment of a helper this process starts (docs/security.md)."""

    kind: str
    """Which backend this is, as a backup's manifest names its source (``"files"``,
    ``"postgresql"``, ``"memory"``): for people and records, never a test of what the
    store can do."""

    folder: str | None
    """The folder that is this store, laid out as docs/format.md says, or ``None``."""

    def exists(self) -> bool:
        """Is there a mailbox yet? (A hook without one stays silent.)"""

    def clock(self) -> float:
        """Now, as a Unix time, by the clock every process of this store agrees on: the
        one that decides times shared between machines (a wake's ``not_before``, a
        presence heartbeat's staleness): the machine's own for a folder, the server's
        for a database."""

    def init(self) -> str:
        """Create the store, or bring an older one up to date; return one line saying
        what was done. Safe to run twice, and from two machines at once."""


class Mail(Protocol):
    """Directed mail: each agent's mailbox of messages in their states (unread, read,
    done), delivered all or nothing and moved forward only."""

    def agent_names(self) -> list[str]:
        """Names that have a mailbox, sorted."""

    def entries(self, agent: str, states: Iterable[State]) -> list[tuple[str, State]]:
        """The ids in ``agent``'s mailbox in those states, in no particular order."""

    def load(self, agent: str, message_id: str, *, header_only: bool = False,
             state: State | None = None) -> tuple[Message, State]:
        """The message and its state for ``agent``; ``NotFound`` or ``Unreadable`` (a
        copy whose header names another id is unreadable). ``state``: a hint, where a
        listing just saw it (it may have moved since)."""

    def deliver(self, message: Message, recipients: Sequence[str]) -> None:
        """Make ``message`` unread for every recipient, durably, before returning. All
        or nothing; ``IdTaken`` if a recipient already has that id."""

    def move(self, agent: str, message_id: str, to: State) -> State:
        """Move the message to ``to`` (never backwards from done); return its old state."""

    def quarantine(self, agent: str | None, message_id: str) -> str:
        """Move a message (``agent`` ``None``: a broadcast) aside, never deleting it, out
        of every listing; return where it went. ``NotFound`` if it is not there."""

    def archive_mailbox(self, agent: str, stamp: str) -> str:
        """Set ``agent``'s whole mailbox aside, kept, out of :meth:`agent_names`; return
        where it went. ``NotFound`` if it has none."""


class Broadcasts(Protocol):
    """Broadcasts: one message for everyone, standing until retracted."""

    def broadcast_ids(self, *, live: bool = True) -> list[str]:
        """Ids of standing (``live``) or retracted broadcasts."""

    def load_broadcast(self, message_id: str, *, header_only: bool = False
                       ) -> tuple[Message, bool]:
        """The broadcast and whether it still stands; ``NotFound`` or ``Unreadable``."""

    def publish(self, message: Message) -> None:
        """Make a broadcast standing, durably, before returning (``IdTaken`` as above)."""

    def retract(self, message_id: str) -> bool:
        """Move a standing broadcast aside; ``False`` if it already was."""


class Logs(Protocol):
    """The append-only logs, each a list of JSON objects in the order they were added:
    ``events`` (the receipts) and ``sessions`` (the sessions mailslot started)."""

    def append_log(self, log: str, record: Mapping[str, Any], *,
                   durable: bool = False) -> None:
        """Add ``record`` to ``log``; ``durable``: it survives a power cut once this
        returns (else it may be lost with the last moment's lines, never reordered)."""

    def read_log(self, log: str, *, newest_first: bool = False
                 ) -> Iterator[dict[str, Any]]:
        """Every readable record of ``log``, oldest first (or newest first, read from
        the end, so a reader that stops early reads little)."""


class Records(Protocol):
    """Keyed records in the namespaces of :mod:`.namespaces`. A key is a tuple of
    words, checked by its namespace (``UnsafePath`` for a part that is no safe name); a
    ``prefix`` is a key's first parts (``()``: everything). Listings come sorted by key
    and skip a record that cannot be read."""

    def get(self, space: str, key: Key) -> Any:
        """The value at ``key``: ``None`` when there is none (a ``set`` namespace: its
        set, empty when there is none)."""

    def items(self, space: str, prefix: Key = ()) -> dict[Key, Any]:
        """Every record whose key starts with ``prefix``, by key."""

    def keys(self, space: str, prefix: Key = ()) -> list[Key]:
        """The keys of :meth:`items`, without reading the values."""

    def put(self, space: str, key: Key, value: Any) -> None:
        """Replace the value at ``key`` whole (a reader sees the old or the new, never
        half of one); in ``registry``, only a record that exists (``NotFound``)."""

    def add(self, space: str, key: Key, value: Any) -> bool:
        """Add without replacing: in a ``value`` namespace, write ``value`` only if
        ``key`` has none (``True``) and else change nothing (``False``), so of two
        processes adding the same key exactly one wins; in a ``set`` namespace, add the
        words of ``value`` to the key's set."""

    def delete(self, space: str, key: Key) -> bool:
        """Remove the record at ``key``; ``False`` if it was gone already."""

    def touched(self, space: str, prefix: Key = ()) -> dict[Key, float]:
        """When each record under ``prefix`` was last written or touched, as a Unix
        time by this machine's clock (a ``timed`` namespace's records)."""

    def touch(self, space: str, key: Key) -> bool:
        """Mark the record at ``key`` as written now, cheaply (every hook does);
        ``False`` (nothing written) if there is none."""

    def update(self, space: str, keys: Sequence[Key],
               change: Callable[[dict[Key, Any]], bool]) -> bool:
        """Read the records at ``keys`` (those stored), let ``change`` edit that dict in
        place and, if it says so, save it: a key left in the dict is written, a key of
        ``keys`` taken out of it removed. All under one lock, so two changes at once
        never lose one another (``config`` and ``limits``)."""

    def take(self, space: str, key: Key) -> tuple[Key, Any] | None:
        """Claim the record at ``key``: move it atomically into ``SPACE.claimed`` under
        a claim only this process holds, and return its new key and value; ``None`` if
        another process took it first (``wake``)."""

    def lock(self, name: str, key: Key) -> AbstractContextManager[bool]:
        """Hold the lock ``name`` of :data:`.namespaces.LOCKS` for ``key``, released by
        the system if the holder dies. ``wake`` is not waited for (it yields ``False``
        when another holder has it); ``launch`` is, and yields ``True``. Other processes
        and machines are kept out (and other threads, except on PostgreSQL's ``wake``
        lock, shared by the threads of one connection)."""


class Watches(Protocol):
    """Being told that something may have changed, so a reader need not poll."""

    def watch(self, kick: Callable[[], None], *, mail_for: str | None = None,
              waiters_of: str | None = None,
              wakes: bool | Callable[[str], bool] = False) -> Watching | None:
        """Call ``kick`` (from another thread) whenever mail may have arrived for
        ``mail_for``, a waiter of ``waiters_of`` changed, or (``wakes``) an entry was
        queued in any queue: for any agent, or, ``wakes`` a test of an agent's name,
        for the agents it accepts (a store that cannot tell whose it is kicks for every
        one). ``None``: this store cannot tell; the caller polls. A kick only means
        "look again"; it may come without a change, and changes may share one kick."""

    def watch_mail(self, kick: Callable[[], None]) -> Watching | None:
        """Call ``kick`` (from another thread) whenever any mailbox or broadcast may have
        changed; ``None``: poll. One may be missed for a change inside a mailbox made a
        moment before the watch began, so a caller also looks again every few seconds."""


class Primitives(Lifecycle, Mail, Broadcasts, Logs, Records, Watches, Protocol):
    """Every primitive: what a backend writes (see the module docstring)."""


GROUPS = (Lifecycle, Mail, Broadcasts, Logs, Records, Watches)
"""The groups of primitives, in the order :class:`Primitives` lists them."""
