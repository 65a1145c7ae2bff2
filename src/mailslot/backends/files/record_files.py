"""The file store's keyed records: where each namespace lives in the mailbox folder,
how it is written, and the :class:`~mailslot.store.primitives.Records` primitives that
check a key and hand the call to its namespace (docs/format.md)::

    config.json                         config: one JSON object (config.lock: its writer)
    sessions/<agent>/<session>          shown: ids a session was shown, one a line
    broadcast/seen/<agent>              seen: broadcasts served, one id a line
    gates/<gate>/passed                 passed: ids let through a gate, one a line
    hook-sessions/<agent>/<session>     a host session's facts (JSON; its time: the last hook)
    instances/<agent>/<id>              mail for one session: the session's id
    latest/<agent>/<host>               the agent's latest session in that host
    claims/<agent>                      the checkout that first read as the agent
    waiters/<agent>/<session>           pid of the session's one background waiter
    presence/<agent>/<key>.json         one running MCP server (JSON)
    registry/<name>.json                a registered agent (JSON, never the secret)
    gates/<gate>/accept                 "members" or "group:<group>" (absent: open)
    gates/<gate>/members/<name>         one empty file per admitted agent
    gates/<gate>/pending/<name>         the id of <name>'s open access request
    fences/<agent>/<session>            the session that replaced <session>
    log/once/<key>                      an empty file: the key was marked
    peers/node.json                     this node's public key (JSON)
    peers/<space>/<node>[/<item>].json  what peers keep: known, links, outbox, sent,
                                        received, progress (JSON; docs/format.md, "Peers")

(the queues and the governor's buckets are :mod:`.wake_files` and :mod:`.limit_files`,
loaded when first asked for: a hook asks for neither). A record is written whole in
``tmp/`` and renamed into place (or linked, or created with ``O_EXCL``, where only the
first writer may win), a set grows by lines appended in one write, and each namespace
syncs what its readers need to survive a power cut, exactly as before it was a
namespace. On the hook path: ``os`` and mailslot's foundation only.
"""

from __future__ import annotations

import os
from stat import S_ISDIR, S_ISREG

from ...core import jsontext
from ...core.durable import fsync_dir, remove
from ...core.errors import NotFound, StoreError, Unreadable, UnsafePath
from ...store.format import decode_record, encode_record
from ...store.namespaces import LOCKS, NAMESPACES, namespace
from .fs import FileLock, append, read_file, read_lines, store_error, write_new
from .layout import MailboxFiles

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from typing import Any

    from ...store.namespaces import Key, Namespace

    Decode = Callable[[bytes, Key, str], Any]
    Encode = Callable[[Any], bytes]


class Space:
    """One namespace's files: ``template`` names the path of a key's file, a fixed word
    for a folder or file name, a number for that part of the key (the last one's file
    name ends in ``suffix``; one that ends in ``besides`` is another namespace's file in
    the same folder)."""

    namespace: Namespace
    """The namespace this space keeps (set where :data:`SPACES` is made)."""

    def __init__(self, template: tuple[str | int, ...], *, suffix: str = "",
                 besides: str = "") -> None:
        self.template, self.suffix, self.besides = template, suffix, besides

    def folder(self, store: MailboxFiles, key: Key, *, create: bool = False) -> str:
        return store._folder(*(key[p] if isinstance(p, int) else p
                               for p in self.template[:-1]), create=create)

    def path(self, store: MailboxFiles, key: Key, *, create: bool = False) -> str:
        last = self.template[-1]
        name = key[last] + self.suffix if isinstance(last, int) else last
        return os.path.join(self.folder(store, key, create=create), name)

    # Listing ----------------------------------------------------------------------------
    def walk(self, store: MailboxFiles, prefix: Key) -> Iterator[tuple[Key, str]]:
        """Every key under ``prefix`` with its file's path, sorted: the fixed part
        through the checked folders, the rest listed (folders and regular files only,
        names failing their part's test skipped). A fixed file name at the end is not
        looked at: its reader finds it missing."""
        if len(prefix) == len(self.namespace.tests):
            yield prefix, self.path(store, prefix)
            return
        cut = next(at for at, p in enumerate(self.template)
                   if isinstance(p, int) and p >= len(prefix))
        base = store._folder(*(prefix[p] if isinstance(p, int) else p
                               for p in self.template[:cut]))
        yield from self._below(base, cut, prefix)

    def _below(self, folder: str, at: int, key: Key) -> Iterator[tuple[Key, str]]:
        element, last = self.template[at], at == len(self.template) - 1
        if isinstance(element, str):
            path = os.path.join(folder, element)
            if last:
                yield key, path
            elif _folder_here(path):  # never through a planted link
                yield from self._below(path, at + 1, key)
            return
        try:
            with os.scandir(folder) as it:
                found = sorted((e.name, e.is_file(follow_symlinks=False) if last
                                else e.is_dir(follow_symlinks=False)) for e in it)
        except (FileNotFoundError, NotADirectoryError):
            return
        test, cut = self.namespace.tests[element], len(self.suffix)
        for name, fits in found:
            part = name[:-cut] if cut and last else name
            if fits and (not last or (name.endswith(self.suffix) and not (
                    self.besides and name.endswith(self.besides)))) and test(part):
                path = os.path.join(folder, name)
                if last:
                    yield (*key, part), path
                else:
                    yield from self._below(path, at + 1, (*key, part))

    def keys(self, store: MailboxFiles, prefix: Key) -> list[Key]:
        fixed = isinstance(self.template[-1], str) or len(prefix) == len(
            self.namespace.tests)
        return [key for key, path in self.walk(store, prefix)
                if not fixed or _regular(path) is not None]

    def touched(self, store: MailboxFiles, prefix: Key) -> dict[Key, float]:
        found = {}
        for key, path in self.walk(store, prefix):
            info = _regular(path)
            if info is not None:
                found[key] = info.st_mtime
        return found

    def touch(self, store: MailboxFiles, key: Key) -> bool:
        try:
            os.utime(self.path(store, key))
        except FileNotFoundError:
            return False
        return True

    def delete(self, store: MailboxFiles, key: Key) -> bool:
        return remove(self.path(store, key))


class Lines(Space):
    """A set of words a key, one a line, grown by appending (synced if ``sync``)."""

    def __init__(self, template: tuple[str | int, ...], *, sync: bool, suffix: str = "",
                 besides: str = "") -> None:
        super().__init__(template, suffix=suffix, besides=besides)
        self.sync = sync

    def get(self, store: MailboxFiles, key: Key) -> set[str]:
        return read_lines(self.path(store, key))

    def items(self, store: MailboxFiles, prefix: Key) -> dict[Key, set[str]]:
        found = {key: read_lines(path) for key, path in self.walk(store, prefix)}
        return {key: words for key, words in found.items() if words}

    def add(self, store: MailboxFiles, key: Key, value: Any) -> bool:
        data = "".join(f"{word}\n" for word in value).encode()
        append(self.path(store, key, create=True), data, sync=self.sync)
        return True


class Files(Space):
    """One file a key, holding its value as ``encode``/``decode`` say. ``sync``: a new
    file's data is synced before it is linked or renamed into place; ``dir_sync``: its
    folder is synced after every change; ``link``: ``add`` stages the file and links it
    (else creates it in place with ``O_EXCL``); ``existing``: ``put`` replaces only a
    file that is there (else :class:`NotFound`)."""

    def __init__(self, template: tuple[str | int, ...], encode: Encode, decode: Decode, *,
                 suffix: str = "", sync: bool = False, dir_sync: bool = False,
                 link: bool = False, existing: str | None = None) -> None:
        super().__init__(template, suffix=suffix)
        self.encode, self.decode = encode, decode
        self.sync, self.dir_sync, self.link, self.existing = sync, dir_sync, link, existing

    def get(self, store: MailboxFiles, key: Key) -> Any:
        path = self.path(store, key)
        try:
            return self.decode(read_file(path), key, path)
        except (FileNotFoundError, ValueError):
            return None

    def items(self, store: MailboxFiles, prefix: Key) -> dict[Key, Any]:
        found = {}
        for key, path in self.walk(store, prefix):
            try:
                found[key] = self.decode(read_file(path), key, path)
            except (OSError, ValueError, Unreadable, UnsafePath):
                continue  # vanished, damaged or planted: doctor names it, a listing goes on
        return found

    def put(self, store: MailboxFiles, key: Key, value: Any) -> None:
        if self.existing is not None and not os.path.lexists(self.path(store, key)):
            raise NotFound(self.existing.format(*key))
        path = self.path(store, key, create=True)
        staged = self._staged(store, key, value)
        try:
            os.rename(staged, path)
        except OSError:
            remove(staged)
            raise
        self._synced(path)

    def add(self, store: MailboxFiles, key: Key, value: Any) -> bool:
        path = self.path(store, key, create=True)
        try:
            if self.link:
                staged = self._staged(store, key, value)
                try:
                    os.link(staged, path)
                finally:
                    os.unlink(staged)
            else:
                write_new(path, self.encode(value), sync=self.sync)
        except FileExistsError:
            return False
        self._synced(path)
        return True

    def delete(self, store: MailboxFiles, key: Key) -> bool:
        path = self.path(store, key)
        gone = remove(path)
        if gone:
            self._synced(path)
        return gone

    def _staged(self, store: MailboxFiles, key: Key, value: Any) -> str:
        """``value``'s file in ``tmp/``, to be renamed or linked into place."""
        return store._stage(self.encode(value), "-".join((str(self.template[0]), *key[:1])),
                            sync=self.sync)

    def _synced(self, path: str) -> None:
        if self.dir_sync:
            fsync_dir(os.path.dirname(path))


class Accept(Files):
    """``gates/<gate>/accept``: opening a gate removes the file, and keeps (makes) its
    folder, as closing one would."""

    def delete(self, store: MailboxFiles, key: Key) -> bool:
        store._folder("gates", key[0], create=True)
        return super().delete(store, key)


def _folder_here(path: str) -> bool:
    try:
        return S_ISDIR(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False


def _regular(path: str) -> os.stat_result | None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    return info if S_ISREG(info.st_mode) else None


def _text(data: bytes, key: Key, path: str) -> str:
    return data.decode("utf-8", "replace")


def _strict(data: bytes, key: Key, path: str) -> str:
    return data.decode()


def _stripped(data: bytes, key: Key, path: str) -> str:
    return data.decode().strip()


def _json(data: bytes, key: Key, path: str) -> Any:
    return jsontext.loads(data)


def _empty(value: Any) -> bytes:
    return b""


def _compact(value: Any) -> bytes:
    return jsontext.dumps(value, ascii=False, compact=True).encode("utf-8")


def _plain(value: Any) -> bytes:
    return str(value).encode()


SPACES: dict[str, Space] = {
    "shown": Lines(("sessions", 0, 1), sync=False, besides=".marks"),
    "marks": Lines(("sessions", 0, 1), sync=False, suffix=".marks"),
    "seen": Lines(("broadcast", "seen", 0), sync=True),
    "passed": Lines(("gates", 0, "passed"), sync=True),
    "hook-sessions": Files(
        ("hook-sessions", 0, 1),
        lambda facts: jsontext.dumps(dict(facts), ascii=False).encode("utf-8"), _json),
    "instances": Files(("instances", 0, 1), _plain, _text, sync=True),
    "latest": Files(("latest", 0, 1), _plain, _strict),
    "claims": Files(("claims", 0), os.fsencode, lambda data, key, path: os.fsdecode(data),
                    sync=True),
    "waiters": Files(("waiters", 0, 1), _plain, lambda data, key, path: int(data)),
    "presence": Files(
        ("presence", 0, 1),
        lambda record: (jsontext.dumps(record, ascii=False) + "\n").encode("utf-8"), _json,
        suffix=".json", sync=True),
    "registry": Files(("registry", 0), encode_record,
                      lambda data, key, path: decode_record(data, key[0], path),
                      suffix=".json", sync=True, dir_sync=True, link=True,
                      existing="no registered agent {}"),
    "accept": Accept(("gates", 0, "accept"), _plain,
                     lambda data, key, path: data.decode("ascii", "replace").strip(),
                     sync=True, dir_sync=True),
    "members": Files(("gates", 0, "members", 1), _empty, _text, sync=True, dir_sync=True),
    "requests": Files(("gates", 0, "pending", 1), _plain, _stripped, sync=True,
                      dir_sync=True),
    "fences": Files(("fences", 0, 1), _plain, _text, sync=True, dir_sync=True),
    "once": Files(("log", "once", 0), _empty, _text, dir_sync=True),
    "peers.node": Files(("peers", "node.json"), _compact, _json, sync=True, dir_sync=True,
                        link=True),
    **{f"peers.{name}": Files(("peers", name, *range(parts)), _compact, _json,
                              suffix=".json", sync=synced, dir_sync=synced, link=True)
       for name, parts, synced in (("known", 1, True), ("links", 1, False),
                                   ("outbox", 2, True), ("sent", 2, True),
                                   ("received", 2, False), ("progress", 1, False))},
}
"""The namespaces kept as one file (or one set of lines) a key."""
for _name, _kept in SPACES.items():
    _kept.namespace = NAMESPACES[_name]


def read_config(store: MailboxFiles, key: Key = ()) -> dict[str, Any] | None:
    """The raw config (``None`` when there is none); ``StoreError`` if unreadable."""
    path = os.path.join(store.root, "config.json")
    try:
        data = read_file(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise store_error(exc, f"cannot read {path}") from None
    try:
        config = jsontext.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise StoreError(f"{path} is not valid JSON ({exc}); fix or remove it") from None
    if not isinstance(config, dict):
        raise StoreError(f"{path} must hold a JSON object")
    return config


def _update_config(store: MailboxFiles, keys: Sequence[Key],
                   change: Callable[[dict[Key, Any]], bool]) -> bool:
    """Read, ``change`` in place, save if it says it changed: under ``config.lock``."""
    with FileLock(os.path.join(store._folder(create=True), "config.lock"), "the config"):
        config = read_config(store)
        held: dict[Key, Any] = {} if config is None else {(): config}
        changed = change(held)
        if changed:
            _save(store, held.get((), {}))
        return changed


def _save(store: MailboxFiles, config: dict[str, Any]) -> None:
    """Replace config.json atomically (holding the lock)."""
    import json  # indented: json's own writer (a config is saved rarely)

    data = (json.dumps(config, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    try:
        tmp = store._stage(data, "config.json")
        os.rename(tmp, os.path.join(store.root, "config.json"))
        fsync_dir(store.root)
    except OSError as exc:
        raise store_error(exc, "cannot save config.json") from None

class ConfigFile:
    """``config.json`` (namespace ``config``), replaced whole (tmp + rename, the folder
    synced) under ``config.lock`` by its one writer, so two edits at once (two
    ``install --wake``) both land."""

    get = staticmethod(read_config)
    update = staticmethod(_update_config)


_WHERE: dict[str, object] = {**SPACES, "config": ConfigFile()}
"""Where each namespace lives: an object (or module) with a function per primitive it
keeps (``get(store, key)``...); the queues' and the buckets' are added when first used."""


def _where(space: str) -> object:
    found = _WHERE.get(space)
    if found is None:
        if space == "limits":
            from . import limit_files as found
        elif space in ("wake", "wake.claimed"):
            from . import wake_files

            found = wake_files.PENDING if space == "wake" else wake_files.CLAIMED
        else:
            raise StoreError(f"the file store keeps no {space} records")
        _WHERE[space] = found
    return found


class RecordFiles(MailboxFiles):
    """The :class:`~mailslot.store.primitives.Records` primitives of the file store."""

    def _do(self, op: str, space: str, key: Key, *args: Any, listing: bool = False) -> Any:
        namespace(space).check(key, prefix=listing)
        call: Callable[..., Any] | None = getattr(_where(space), op, None)
        if call is None:
            raise StoreError(f"the file store does not {op} {space} records")
        try:
            return call(self, key, *args)
        except OSError as exc:
            raise store_error(exc, f"cannot {op} {space} {'/'.join(key)}") from None

    def get(self, space: str, key: Key) -> Any:
        return self._do("get", space, key)

    def items(self, space: str, prefix: Key = ()) -> dict[Key, Any]:
        return self._do("items", space, prefix, listing=True)  # type: ignore[no-any-return]

    def keys(self, space: str, prefix: Key = ()) -> list[Key]:
        return self._do("keys", space, prefix, listing=True)  # type: ignore[no-any-return]

    def put(self, space: str, key: Key, value: Any) -> None:
        self._do("put", space, key, value)

    def add(self, space: str, key: Key, value: Any) -> bool:
        return bool(self._do("add", space, key, value))

    def delete(self, space: str, key: Key) -> bool:
        return bool(self._do("delete", space, key))

    def touched(self, space: str, prefix: Key = ()) -> dict[Key, float]:
        return self._do("touched", space, prefix, listing=True)  # type: ignore[no-any-return]

    def touch(self, space: str, key: Key) -> bool:
        return bool(self._do("touch", space, key))

    def take(self, space: str, key: Key) -> tuple[Key, Any] | None:
        return self._do("take", space, key)  # type: ignore[no-any-return]

    def update(self, space: str, keys: Sequence[Key],
               change: Callable[[dict[Key, Any]], bool]) -> bool:
        checked = [namespace(space).check(key) for key in keys]
        call = getattr(_where(space), "update", None)
        if call is None:
            raise StoreError(f"the file store does not update {space} records")
        try:
            return bool(call(self, checked, change))
        except OSError as exc:
            raise store_error(exc, f"cannot update {space} records") from None

    def lock(self, name: str, key: Key) -> Any:
        if name == "launch" and key == ():
            return FileLock(os.path.join(self._folder("log", create=True), "sessions.lock"),
                            "the session log")
        if name != "wake" or len(key) != len(LOCKS["wake"]):
            raise StoreError(f"no lock {name} {key!r} in a mailslot store")
        namespace("wake").check(key, prefix=True)
        from . import wake_files

        return wake_files.queue_lock(self, key)
