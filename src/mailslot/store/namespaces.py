"""The store's keyed records: every namespace, its key, and what a key may be.

Besides mail, everything a store keeps is a record under a key in a named namespace
(:data:`NAMESPACES`), read and written through one keyed-records primitive
(:class:`~mailslot.store.primitives.Records`). A key is a tuple of words, one per part
the namespace names; a namespace is either ``value`` (one value a key) or ``set`` (a set
of words a key, grown by ``add``). Each backend maps every namespace to its own storage:
the file store to a path rule and an encoding (docs/format.md: the layout does not
change with this list), PostgreSQL to a table. Every key is checked here, the same for
every backend, before it names a file or a row: a part that could lead outside its
folder is :class:`~mailslot.core.errors.UnsafePath`.

Copying a store (``migrate``, a backup) is one loop over the namespaces marked
``copied``. On the hook path: it loads no ``typing`` and compiles no pattern.
"""

from __future__ import annotations

from ..core.addresses import is_node_name
from ..core.errors import UnsafePath
from ..core.ids import is_id
from ..core.names import SESSION_KEY, is_gate_key, is_valid_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    Key = tuple[str, ...]


def is_part(raw: str) -> bool:
    """A word safe as one file name: no separator, not hidden, not ``.``/``..``."""
    return 0 < len(raw) <= 255 and "/" not in raw and "\0" not in raw and raw[0] != "."


def is_agent(raw: str) -> bool:
    """An agent's name as queues file it: valid and lower case."""
    return is_valid_name(raw) and raw == raw.lower()


NOTIFY_QUEUES = 8
"""How many notifier queues a store keeps: one per place in an agent's ``notify``
list, so at most this many notifiers per agent."""
QUEUES = ("wake", *(f"notify-{lane}" for lane in range(NOTIFY_QUEUES)))
"""The wake queue and the notifier queues, by name (:func:`.records.notify_lane`)."""
_BUCKET_PART = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")


def is_bucket_part(raw: str) -> bool:
    return 0 < len(raw) <= 64 and _BUCKET_PART.issuperset(raw)


def is_once_key(raw: str) -> bool:
    """1-240 of ``a-z 0-9 . _ + - @`` (a message id from another node fits), not
    starting with a dot."""
    return 0 < len(raw) <= 240 and raw[0] != "." and not raw.strip(
        "abcdefghijklmnopqrstuvwxyz0123456789._+-@")


_HEX = frozenset("0123456789abcdef")


def is_outbox_item(raw: str) -> bool:
    """What waits for a peer: a message id, or a receipt's ``r-<hex>``."""
    return is_id(raw) or (raw.startswith("r-") and 8 <= len(raw) <= 66
                          and _HEX.issuperset(raw[2:]))


def is_envelope_id(raw: str) -> bool:
    """An envelope id: 16-64 hexadecimal digits."""
    return 16 <= len(raw) <= 64 and _HEX.issuperset(raw)


def is_claim(raw: str) -> bool:
    return is_part(raw) and raw.count(".") >= 2


class Namespace:
    """One namespace: its name, its key's parts (each checked by one test), its kind,
    whether it keeps when each record was last written or touched (``timed``), and what
    a copy of the store counts it as (``copied``; ``None``: not copied, it describes a
    running process or a cache). ``replace``: how a copy puts a record the target holds
    differently (``True``: replaced; ``False``: the target's is kept, as ``add`` does)."""

    __slots__ = ("copied", "kind", "least", "name", "parts", "replace", "tests", "timed")

    def __init__(self, name: str, parts: tuple[str, ...],
                 tests: tuple[Callable[[str], bool], ...], *, kind: str = "value",
                 timed: bool = False, copied: str | None = None, replace: bool = False,
                 least: int | None = None) -> None:
        self.name, self.parts, self.tests, self.kind = name, parts, tests, kind
        self.timed, self.copied, self.replace = timed, copied, replace
        self.least = len(tests) if least is None else least
        """How many parts a whole key has at least (a bucket's may have one more)."""

    def check(self, key: Key, *, prefix: bool = False) -> Key:
        """``key`` (or with ``prefix``, its first parts) if every part passes its test;
        else :class:`UnsafePath`, naming the namespace."""
        tests = self.tests
        if len(key) > len(tests) or (not prefix and len(key) < self.least):
            raise UnsafePath(f"{key!r} is not a key of {self.name}")
        for part, test in zip(key, tests, strict=False):
            if not (isinstance(part, str) and test(part)):
                raise UnsafePath(f"{part!r} is not safe as a part of a {self.name} key")
        return key

    def label(self, key: Key) -> str:
        """What a copy counts a record of this namespace as."""
        if self.name == "wake" and key[0] != "wake":
            return "notices"
        return self.copied or self.name


def _space(name: str, parts: tuple[str, ...], *tests: Callable[[str], bool],
           **options: object) -> Namespace:
    return Namespace(name, parts, tests, **options)  # type: ignore[arg-type]


_EVERY = (
    _space("config", ()),
    _space("shown", ("agent", "session"), is_part, SESSION_KEY.fullmatch, kind="set",
           timed=True),
    _space("marks", ("agent", "session"), is_part, SESSION_KEY.fullmatch, kind="set",
           timed=True),
    _space("seen", ("agent",), is_part, kind="set", copied="seen"),
    _space("passed", ("gate",), is_gate_key, kind="set", copied="passed"),
    _space("hook-sessions", ("agent", "session"), is_part, SESSION_KEY.fullmatch,
           timed=True),
    _space("instances", ("agent", "id"), is_part, is_id, timed=True,
           copied="instance mail"),
    _space("latest", ("agent", "host"), is_part, SESSION_KEY.fullmatch),
    _space("claims", ("agent",), is_part),
    _space("waiters", ("agent", "session"), is_part, SESSION_KEY.fullmatch, timed=True),
    _space("presence", ("agent", "key"), is_part, is_part),
    _space("registry", ("name",), is_valid_name, copied="registrations"),
    _space("accept", ("gate",), is_gate_key, copied="gates", replace=True),
    _space("members", ("gate", "member"), is_gate_key, is_valid_name, copied="members"),
    _space("requests", ("gate", "requester"), is_gate_key, is_valid_name,
           copied="requests", replace=True),
    _space("fences", ("agent", "session"), is_valid_name, SESSION_KEY.fullmatch),
    _space("limits", ("kind", "owner", "other"), is_bucket_part, is_bucket_part,
           is_bucket_part, least=2),
    _space("once", ("key",), is_once_key),
    _space("wake", ("queue", "agent", "id"), QUEUES.__contains__, is_agent, is_id,
           copied="wakes"),
    _space("wake.claimed", ("queue", "agent", "id", "claim"), QUEUES.__contains__, is_agent,
           is_id, is_claim),
    _space("peers.node", (), copied="node key"),
    _space("peers.known", ("node",), is_node_name, copied="peers", replace=True),
    _space("peers.links", ("node",), is_node_name),
    _space("peers.outbox", ("node", "item"), is_node_name, is_outbox_item,
           copied="for peers"),
    _space("peers.sent", ("agent", "id"), is_valid_name, is_id, copied="sent to peers"),
    _space("peers.received", ("node", "envelope"), is_node_name, is_envelope_id,
           copied="envelopes taken"),
    _space("peers.progress", ("node",), is_node_name),
)
NAMESPACES: dict[str, Namespace] = {space.name: space for space in _EVERY}
"""Every namespace by name: what each holds is in docs/architecture.md's table."""
LOCKS = {"wake": ("queue", "agent"), "launch": ()}
"""The locks a store holds, by name, with their key's parts: a queue's per-agent lock
(not waited for) and the lock of starting sessions (waited for)."""


def namespace(name: str) -> Namespace:
    found = NAMESPACES.get(name)
    if found is None:
        raise UnsafePath(f"no namespace {name!r} in a mailslot store")
    return found
