"""Everything peers keep, behind one small interface: keyed records in a few namespaces.

:class:`PeerState` is the store's keyed-records primitive in miniature (``get``,
``items``, ``keys``, ``put``, ``add``, ``delete``), over the namespaces of
:data:`SPACES`; a value is a JSON object. Two implementations, kept together here:

* :class:`FileState`: ``<mailbox>/peers/<space>/<part>/.../<last>.json`` (a key of no
  parts: ``peers/<space>.json``), folders 0700, files 0600, written whole (staged, synced,
  renamed or linked into place) and never through a link (:mod:`mailslot.core.durable`);
* :class:`PgState`: one table, ``peer_records (space, key, value)`` (migration 16), the
  key's parts joined with ``/``.

The namespaces (docs/format.md, "Peers"):

``node``      ``()``              this node's public key (never the private one)
``known``     ``(node,)``         a peer: its pinned key, roster, removed or not
``links``     ``(node,)``         how the link to a peer went last (up, since, error)
``outbox``    ``(node, item)``    what waits to go to a peer: mail by its id, receipts
``sent``      ``(agent, id)``     the sender's copy of mail that went (only) to peers
``received``  ``(node, eid)``     envelopes taken from a peer (replays are refused)
``cursor``    ``(node,)``         how far the events log was read for a peer's receipts

``received``, ``links`` and ``cursor`` are written without a sync: losing the newest
of them to a power cut sends a receipt twice or a duplicate once more, which the
other side takes as a duplicate (nothing stored twice).
"""

from __future__ import annotations

import os

from ..core import jsontext
from ..core.addresses import is_node_name
from ..core.durable import CREATE, check_folder, fsync_dir, make_folders, open_file, read_file
from ..core.errors import StoreError, UnsafePath
from ..core.ids import is_id
from ..core.names import is_valid_name
from ..core.values import Protocol

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..store import Store

    Key = tuple[str, ...]

_HEX = frozenset("0123456789abcdef")
_RECORD_LIMIT = 32 * 1024 * 1024


def is_item(raw: str) -> bool:
    """An outbox item: a message id, or a receipt's ``r-<hex>``."""
    return is_id(raw) or (raw.startswith("r-") and 8 <= len(raw) <= 66
                          and _HEX.issuperset(raw[2:]))


def is_eid(raw: str) -> bool:
    """An envelope id: 16-64 hexadecimal digits (:func:`.envelope.new_eid`)."""
    return 16 <= len(raw) <= 64 and _HEX.issuperset(raw)


SPACES: dict[str, tuple[Callable[[str], bool], ...]] = {
    "node": (),
    "known": (is_node_name,),
    "links": (is_node_name,),
    "outbox": (is_node_name, is_item),
    "sent": (is_valid_name, is_id),
    "received": (is_node_name, is_eid),
    "cursor": (is_node_name,),
}
_UNSYNCED = frozenset({"received", "links", "cursor"})


def check(space: str, key: Key, *, prefix: bool = False) -> Key:
    """``key`` if each part passes its namespace's test; else :class:`UnsafePath`."""
    tests = SPACES.get(space)
    if tests is None:
        raise UnsafePath(f"no peer namespace {space!r}")
    if len(key) > len(tests) or (not prefix and len(key) != len(tests)):
        raise UnsafePath(f"{key!r} is not a key of peers/{space}")
    for part, test in zip(key, tests, strict=False):
        if not (isinstance(part, str) and test(part)):
            raise UnsafePath(f"{part!r} is not safe as a part of a peers/{space} key")
    return key


class PeerState(Protocol):
    """Keyed records of peers (see the module docstring); every failure a
    :class:`~mailslot.core.errors.MailslotError`."""

    def get(self, space: str, key: Key) -> Any:
        """The value at ``key``, or ``None``."""

    def items(self, space: str, prefix: Key = ()) -> dict[Key, Any]:
        """Every readable record under ``prefix``, by key, sorted."""

    def keys(self, space: str, prefix: Key = ()) -> list[Key]:
        """The keys of :meth:`items`, sorted, without reading the values."""

    def put(self, space: str, key: Key, value: Any) -> None:
        """Replace the value at ``key`` whole."""

    def add(self, space: str, key: Key, value: Any) -> bool:
        """Write ``value`` only if ``key`` has none (``True``); else change nothing."""

    def delete(self, space: str, key: Key) -> bool:
        """Remove the record; ``False`` if it was gone already."""


def open_state(store: Store) -> PeerState:
    """The peer state of ``store``: its folder's, or its database's."""
    if store.folder is not None:
        return FileState(store.folder)
    if store.kind == "postgresql":
        return PgState(store.address, store.location)
    raise StoreError(f"a {store.kind} mailbox keeps no peers")


class FileState:
    """:class:`PeerState` in ``<mailbox>/peers/``."""

    def __init__(self, folder: str) -> None:
        self.root = os.path.join(folder, "peers")

    def _path(self, space: str, key: Key, *, create: bool = False) -> str:
        check(space, key)
        if not key:
            return os.path.join(self._folder((), create), f"{space}.json")
        return os.path.join(self._folder((space, *key[:-1]), create), f"{key[-1]}.json")

    def _folder(self, parts: tuple[str, ...], create: bool) -> str:
        """``peers/<parts>``, each level checked: a real folder of this user's."""
        path = self.root
        for part in ("", *parts):
            path = os.path.join(path, part) if part else path
            try:
                check_folder(path)
            except FileNotFoundError:
                if not create:
                    raise
                make_folders(path)
                check_folder(path)
        return path

    def get(self, space: str, key: Key) -> Any:
        try:
            return _decode(read_file(self._path(space, key), _RECORD_LIMIT), space, key)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StoreError(f"cannot read peers/{space} {'/'.join(key)}: {exc}") from None

    def keys(self, space: str, prefix: Key = ()) -> list[Key]:
        check(space, prefix, prefix=True)
        return sorted(self._walk(space, prefix))

    def _walk(self, space: str, prefix: Key) -> list[Key]:
        depth = len(SPACES[space])
        try:
            folder = self._folder((space, *prefix), create=False)
            names = os.listdir(folder)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise StoreError(f"cannot list peers/{space}: {exc}") from None
        found: list[Key] = []
        for name in names:
            if name.startswith("."):
                continue  # a write in progress
            if len(prefix) + 1 == depth:
                if name.endswith(".json") and SPACES[space][-1](name[:-5]):
                    found.append((*prefix, name[:-5]))
            elif SPACES[space][len(prefix)](name):
                found.extend(self._walk(space, (*prefix, name)))
        return found

    def items(self, space: str, prefix: Key = ()) -> dict[Key, Any]:
        found = {}
        for key in self.keys(space, prefix):
            try:
                value = self.get(space, key)
            except StoreError:
                continue  # unreadable: skipped, as listings do
            if value is not None:
                found[key] = value
        return found

    def put(self, space: str, key: Key, value: Any) -> None:
        self._write(space, key, value, exclusive=False)

    def add(self, space: str, key: Key, value: Any) -> bool:
        return self._write(space, key, value, exclusive=True)

    def _write(self, space: str, key: Key, value: Any, *, exclusive: bool) -> bool:
        try:
            target = self._path(space, key, create=True)
            if os.path.islink(target):
                raise UnsafePath(f"{target} is a symlink; mailslot does not follow links")
            folder, name = os.path.split(target)
            staged = os.path.join(folder, f".{name}.{os.getpid()}.{os.urandom(4).hex()}")
            sync = space not in _UNSYNCED
            fd = open_file(staged, CREATE)
            try:
                os.write(fd, jsontext.dumps(value, ascii=False, compact=True).encode())
                if sync:
                    os.fsync(fd)
            finally:
                os.close(fd)
            try:
                if exclusive:
                    try:
                        os.link(staged, target)
                    except FileExistsError:
                        return False
                else:
                    os.replace(staged, target)
            finally:
                if exclusive or os.path.lexists(staged):
                    os.unlink(staged)
            if sync:
                fsync_dir(folder)
            return True
        except OSError as exc:
            raise StoreError(f"cannot write peers/{space} {'/'.join(key)}: {exc}") from None

    def delete(self, space: str, key: Key) -> bool:
        try:
            os.unlink(self._path(space, key))
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise StoreError(f"cannot remove peers/{space} {'/'.join(key)}: {exc}") from None
        return True


def _decode(data: bytes, space: str, key: Key) -> Any:
    try:
        return jsontext.loads(data)
    except ValueError:
        raise StoreError(f"peers/{space} {'/'.join(key)} is not readable JSON") from None


class PgState:
    """:class:`PeerState` in the table ``peer_records`` (migration 16)."""

    def __init__(self, url: str, location: str) -> None:
        import threading

        self.url, self.location = url, location
        self._conn: Any = None
        self._lock = threading.Lock()

    def close(self) -> None:
        """End the connection (a later call opens a new one)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __del__(self) -> None:
        """Dropped without :meth:`close`: its connection still ends cleanly."""
        if getattr(self, "_conn", None) is not None:
            self._conn.close()

    def _run(self, what: str, sql: str, args: tuple[Any, ...]) -> list[Any]:
        with self._lock:
            return self._attempt(what, sql, args)

    def _attempt(self, what: str, sql: str, args: tuple[Any, ...]) -> list[Any]:
        import psycopg

        for attempt in (1, 2):
            try:
                if self._conn is None or self._conn.closed or self._conn.broken:
                    self._conn = psycopg.connect(self.url, autocommit=True,
                                                 connect_timeout=5)
                cursor = self._conn.execute(sql, args)
                return cursor.fetchall() if cursor.description else [cursor.rowcount]
            except psycopg.OperationalError as exc:
                if attempt == 2 or self._conn is None or not self._conn.broken:
                    raise StoreError(f"{what} at {self.location}: {_line(exc)}") from None
            except psycopg.Error as exc:
                raise StoreError(f"{what} at {self.location}: {_line(exc)}") from None
        raise AssertionError("unreachable")

    def get(self, space: str, key: Key) -> Any:
        rows = self._run("cannot read peers", "SELECT value FROM peer_records WHERE space "
                         "= %s AND key = %s", (space, "/".join(check(space, key))))
        return _decode(rows[0][0].encode(), space, key) if rows else None

    def _listed(self, space: str, prefix: Key, column: str) -> list[Any]:
        joined = "/".join(check(space, prefix, prefix=True))
        return self._run("cannot list peers", f"SELECT key, {column} FROM peer_records "
                         "WHERE space = %s AND (%s = '' OR starts_with(key, %s || '/')) "
                         "ORDER BY key", (space, joined, joined))

    def keys(self, space: str, prefix: Key = ()) -> list[Key]:
        return [tuple(row[0].split("/")) for row in self._listed(space, prefix, "''")]

    def items(self, space: str, prefix: Key = ()) -> dict[Key, Any]:
        found = {}
        for key, value in self._listed(space, prefix, "value"):
            try:
                found[tuple(key.split("/"))] = _decode(value.encode(), space, key)
            except StoreError:
                continue
        return found

    def put(self, space: str, key: Key, value: Any) -> None:
        self._run("cannot write peers", "INSERT INTO peer_records (space, key, value) "
                  "VALUES (%s, %s, %s) ON CONFLICT (space, key) DO UPDATE SET value = "
                  "excluded.value, written = now()",
                  (space, "/".join(check(space, key)), jsontext.dumps(value, compact=True)))

    def add(self, space: str, key: Key, value: Any) -> bool:
        rows = self._run("cannot write peers", "INSERT INTO peer_records (space, key, value)"
                         " VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                         (space, "/".join(check(space, key)),
                          jsontext.dumps(value, compact=True)))
        return bool(rows[0])

    def delete(self, space: str, key: Key) -> bool:
        rows = self._run("cannot remove peers", "DELETE FROM peer_records WHERE space = %s "
                         "AND key = %s", (space, "/".join(check(space, key))))
        return bool(rows[0])


def _line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
