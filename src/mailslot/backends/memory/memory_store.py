"""A store in this process's memory: the primitives of :mod:`mailslot.store.primitives`
and nothing else, every other method inherited from the roles of :mod:`mailslot.store`.

Opened by ``memory://NAME`` (:func:`~mailslot.backends.open_store`): every store of one
name in a process shares one mailbox, so two store objects behave as two processes of
one mailbox would; it ends with the process. It keeps message files' bytes exactly as
the file store writes them and reads them through the same parser, so a message is the
id it is stored under here too. Nothing it holds can be watched (callers poll).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from copy import deepcopy
from typing import Any

from ...core import jsontext
from ...core.errors import IdTaken, NotFound, StoreError
from ...core.message import STATES, Message, State, to_bytes
from ...core.values import replace  # either kind of value class
from ...store.base import Store
from ...store.format import parse_message_file
from ...store.namespaces import LOCKS, namespace

Key = tuple[str, ...]
LOGS = ("events", "sessions")


class Shared:
    """What one named memory store holds, under one lock."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.mail: dict[str, dict[str, tuple[bytes, State]]] = {}
        self.broadcasts: dict[str, tuple[bytes, bool]] = {}
        self.aside: list[tuple[str, bytes]] = []
        self.logs: dict[str, list[str]] = {log: [] for log in LOGS}
        self.records: dict[str, dict[Key, tuple[Any, float]]] = {}
        self.locks: dict[tuple[str, Key], threading.Lock] = {}
        self.claims = 0


_OPEN: dict[str, Shared] = {}


class MemoryStore(Store):
    """The memory store ``name`` of this process (``""``: one of its own)."""

    kind = "memory"
    folder: str | None = None

    def __init__(self, name: str = "") -> None:
        self.location = self.address = f"memory://{name}"
        with _GUARD:
            self._box = _OPEN.setdefault(name, Shared()) if name else Shared()

    # The store itself ------------------------------------------------------------------
    def exists(self) -> bool:
        return True  # made when opened

    def clock(self) -> float:
        return time.time()

    def init(self) -> str:
        return f"{self.location} is a mailbox (memory, until this process ends)"

    # Mail --------------------------------------------------------------------------------
    def agent_names(self) -> list[str]:
        return sorted(agent for agent, held in self._box.mail.items() if held)

    def entries(self, agent: str, states: Iterable[State]) -> list[tuple[str, State]]:
        wanted = set(states)
        return [(i, s) for i, (_, s) in list(self._box.mail.get(agent, {}).items())
                if s in wanted]

    def load(self, agent: str, message_id: str, *, header_only: bool = False,
             state: State | None = None) -> tuple[Message, State]:
        found = self._box.mail.get(agent, {}).get(message_id)
        if found is None:
            raise NotFound(f"no message {message_id} for {agent}")
        place = f"{self.location}#{agent}/{message_id}"
        return parse_message_file(found[0], message_id, place, header_only), found[1]

    def deliver(self, message: Message, recipients: Sequence[str]) -> None:
        data = to_bytes(message)
        with self._box.lock:
            for agent in recipients:
                if message.id in self._box.mail.get(agent, {}):
                    raise IdTaken(f"{message.id} is already taken in {agent}'s mailbox; "
                                  "nothing was written")
            for agent in recipients:
                self._box.mail.setdefault(agent, {})[message.id] = (data, "unread")

    def move(self, agent: str, message_id: str, to: State) -> State:
        with self._box.lock:
            data, state = self._box.mail.get(agent, {}).get(message_id) or (b"", None)
            if state is None:
                raise NotFound(f"no message {message_id} for {agent}")
            if STATES.index(state) < STATES.index(to):
                self._box.mail[agent][message_id] = (data, to)
            return state

    def quarantine(self, agent: str | None, message_id: str) -> str:
        with self._box.lock:
            held: dict[str, tuple[bytes, Any]] = self._box.broadcasts if agent is None \
                else self._box.mail.get(agent, {})
            if message_id not in held:
                raise NotFound(f"no message {message_id} for {agent or 'the broadcasts'}")
            self._box.aside.append((message_id, held.pop(message_id)[0]))
        return f"{self.location}#quarantine/{agent or 'broadcast'}/{message_id}"

    def archive_mailbox(self, agent: str, stamp: str) -> str:
        with self._box.lock:
            held = self._box.mail.pop(agent, {})
            if not held:
                raise NotFound(f"no mailbox for {agent}")
            self._box.aside += [(i, data) for i, (data, _) in held.items()]
        return f"{self.location}#archive/{agent}-{stamp}"

    # Broadcasts --------------------------------------------------------------------------
    def broadcast_ids(self, *, live: bool = True) -> list[str]:
        return [i for i, (_, standing) in list(self._box.broadcasts.items())
                if standing == live]

    def load_broadcast(self, message_id: str, *, header_only: bool = False
                       ) -> tuple[Message, bool]:
        found = self._box.broadcasts.get(message_id)
        if found is None:
            raise NotFound(f"no broadcast {message_id}")
        place = f"{self.location}#broadcast/{message_id}"
        return parse_message_file(found[0], message_id, place, header_only), found[1]

    def publish(self, message: Message) -> None:
        with self._box.lock:
            if message.id in self._box.broadcasts:
                raise IdTaken(f"{message.id} is already taken in the broadcasts; nothing "
                              "was written")
            self._box.broadcasts[message.id] = (to_bytes(message), True)

    def retract(self, message_id: str) -> bool:
        with self._box.lock:
            found = self._box.broadcasts.get(message_id)
            if found is None:
                raise NotFound(f"no broadcast {message_id}")
            self._box.broadcasts[message_id] = (found[0], False)
            return found[1]

    # Logs --------------------------------------------------------------------------------
    def append_log(self, log: str, record: Mapping[str, Any], *,
                   durable: bool = False) -> None:
        self._log(log).append(jsontext.dumps(record, ascii=False, compact=True))

    def read_log(self, log: str, *, newest_first: bool = False
                 ) -> Iterator[dict[str, Any]]:
        lines = list(self._log(log))
        for line in reversed(lines) if newest_first else lines:
            yield jsontext.loads(line)

    def _log(self, log: str) -> list[str]:
        if log not in self._box.logs:
            raise StoreError(f"no log {log!r} in a mailslot store")
        return self._box.logs[log]

    # Keyed records -----------------------------------------------------------------------
    def _space(self, space: str, key: Key, *, prefix: bool = False) -> dict[Key, Any]:
        namespace(space).check(key, prefix=prefix)
        return self._box.records.setdefault(space, {})

    def get(self, space: str, key: Key) -> Any:
        found = self._space(space, key).get(key)
        if namespace(space).kind == "set":
            return set() if found is None else set(found[0])
        return None if found is None else deepcopy(found[0])

    def items(self, space: str, prefix: Key = ()) -> dict[Key, Any]:
        held = self._space(space, prefix, prefix=True)
        return {key: deepcopy(held[key][0]) for key in sorted(held)
                if key[:len(prefix)] == prefix}

    def keys(self, space: str, prefix: Key = ()) -> list[Key]:
        return list(self.items(space, prefix))

    def put(self, space: str, key: Key, value: Any) -> None:
        held = self._space(space, key)
        if space == "registry" and key not in held:
            raise NotFound(f"no registered agent {key[0]}")
        held[key] = (deepcopy(value), time.time())

    def add(self, space: str, key: Key, value: Any) -> bool:
        with self._box.lock:
            held = self._space(space, key)
            if namespace(space).kind == "set":
                held[key] = ({*held.get(key, (set(), 0.0))[0], *value}, time.time())
                return True
            if key in held:
                return False
            held[key] = (deepcopy(value), time.time())
            return True

    def delete(self, space: str, key: Key) -> bool:
        return self._space(space, key).pop(key, None) is not None

    def touched(self, space: str, prefix: Key = ()) -> dict[Key, float]:
        held = self._space(space, prefix, prefix=True)
        return {key: held[key][1] for key in sorted(held) if key[:len(prefix)] == prefix}

    def touch(self, space: str, key: Key) -> bool:
        with self._box.lock:
            held = self._space(space, key)
            if key not in held:
                return False
            held[key] = (held[key][0], time.time())
            return True

    def update(self, space: str, keys: Sequence[Key],
               change: Callable[[dict[Key, Any]], bool]) -> bool:
        with self._box.lock:
            held = self._space(space, (), prefix=True)
            wanted = [namespace(space).check(key) for key in keys]
            chosen = {key: deepcopy(held[key][0]) for key in wanted if key in held}
            if not change(chosen):
                return False
            for key in wanted:
                held.pop(key, None)
            held.update((key, (value, time.time())) for key, value in chosen.items())
            return True

    def take(self, space: str, key: Key) -> tuple[Key, Any] | None:
        with self._box.lock:
            entry = self._space(space, key).pop(key, (None,))[0]
            if entry is None:
                return None
            self._box.claims += 1
            claim = f"{key[2]}.memory.{self._box.claims}"
            taken = replace(entry, claim=claim)
            self._space(f"{space}.claimed", (*key, claim))[(*key, claim)] = (taken,
                                                                             time.time())
            return (*key, claim), taken

    def lock(self, name: str, key: Key) -> Held:
        if name not in LOCKS or len(key) != len(LOCKS[name]):
            raise StoreError(f"no lock {name} {key!r} in a mailslot store")
        with self._box.lock:
            held = self._box.locks.setdefault((name, key), threading.Lock())
        return Held(held, wait=name == "launch")

    # Watching ----------------------------------------------------------------------------
    def watch(self, kick: Callable[[], None], *, mail_for: str | None = None,
              waiters_of: str | None = None,
              wakes: bool | Callable[[str], bool] = False) -> None:
        return None  # nothing tells: the caller polls

    def watch_mail(self, kick: Callable[[], None]) -> None:
        return None


class Held:
    """A held lock of the store: waited for (``wait``) or not (``False`` when another
    holder has it)."""

    def __init__(self, lock: threading.Lock, *, wait: bool) -> None:
        self._lock, self._wait, self._held = lock, wait, False

    def __enter__(self) -> bool:
        self._held = self._lock.acquire(blocking=self._wait)
        return self._held

    def __exit__(self, *exc: object) -> None:
        if self._held:
            self._lock.release()


_GUARD = threading.Lock()
