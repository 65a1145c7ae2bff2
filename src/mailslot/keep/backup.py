"""Backups: a consistent snapshot of a mailbox as one tar.gz with a manifest of
checksums, and its restore into any store (``mailslot backup`` / ``mailslot restore``).

A backup is the file store's own layout (docs/format.md) in a tar.gz, whatever the
store it was taken from, with ``manifest.json`` last: the format, when, from which kind
of store, and the SHA-256 of every other member. So a person can open one with ``tar``
and read every message, and a backup of the file store restores into PostgreSQL and
back. Messages are read through the :class:`~mailslot.store.Store` protocol, never by
copying the folder: the snapshot is taken while agents keep writing.

Consistency (what "no torn or half-present message" means here): every message in a
backup is whole (a store never shows half a message), and a directed message is in
every mailbox its header names, or was left out because its delivery did not finish.
A message seen in some of its recipients' mailboxes is looked for again in the others
until its delivery has finished (a delivery is all or nothing: it lands everywhere, or
is rolled back). Each message is in a state it had during the backup; states only move
forward, so a listing never misses a message that moved while it was listed.

Restore verifies every checksum before anything reaches the target: the backup is
unpacked into a private staging folder, checked whole, and only then copied in with
:func:`mailslot.keep.transfer.migrate` (so the union is the one migrate keeps: nothing
overwritten, a second run copies nothing). An encrypted backup (``sealing``) is
decrypted into the same staging folder; its authentication refuses any change. Unpacking
is bounded before anything is decompressed, by what each member's tar header declares:
a message file at most the largest the send limit allows (the backup's own
``max_body_bytes``, never below its default), the config at :data:`MAX_CONFIG_BYTES`,
any other file at :data:`MAX_MEMBER_BYTES`, and the whole at ``max_bytes`` and at
:data:`MAX_RATIO` times the backup's size (plus :data:`RATIO_FLOOR`); files other than
messages and the config are copied to the staging folder in chunks, never held whole.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import tarfile
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, BinaryIO

from ..backends import open_store
from ..core import __version__
from ..core.config import Config
from ..core.dates import UTC, datetime
from ..core.durable import fsync_dir
from ..core.errors import InvalidInput, MailslotError, NotFound, Refused, StoreError, Unreadable
from ..core.message import STATES, Message, State, from_bytes, max_file_bytes, to_bytes
from ..core.text import DEFAULT_MAX_BODY_BYTES, quoted
from ..store import FOLDER_OF, Store, is_kept_file
from .transfer import carry_records, check_target, migrate

FORMAT = "mailslot-backup/1"
MANIFEST = "manifest.json"
SETTLE_SECONDS = 2.0
"""How long a message seen in only some of its recipients' mailboxes is looked for in
the others (a delivery takes milliseconds; past this its copies are taken as they are:
a mailbox archived or a copy set aside by hand)."""

MAX_MEMBER_BYTES = 1 << 30
"""No file of a mailbox comes near this (a message is at most a few MiB, the events log
is rolled at 8 MiB): a member past it is a hostile archive, refused unread."""
MAX_CONFIG_BYTES = 4 << 20
"""A config is a few kilobytes: one past this is not a mailbox's."""
MAX_RATIO = 100
"""A backup unpacks to at most this many times its size, plus :data:`RATIO_FLOOR`
(mailbox text packs 4 to 5 times; a zip bomb's zeros a thousand)."""
RATIO_FLOOR = 64 << 20
_CHUNK = 1 << 20

MAX_ARCHIVE_BYTES = 8 << 30
"""The default bound on everything a backup unpacks to (``restore --max-bytes``): a
mailbox of 100,000 messages of 64 KiB is under 7 GiB. Past it a backup is refused
before the staging folder fills the disk; a larger mailbox gives a larger bound."""
_SKIPPED_TOP = {"tmp", "index", "presence", "sessions", "archive", "quarantine"}
"""Parts of a file-store folder a backup never holds: staging, the derived search
index, running processes' records, and what was set aside on purpose (as migrate)."""


@dataclass
class Summary:
    """What a backup holds, or what a restore copied."""

    counts: Counter[str] = field(default_factory=Counter)
    skipped: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {"counts": dict(+self.counts), "unreadable": self.skipped}


# Taking a backup -----------------------------------------------------------------------
def backup(store: Store, output: str, *,
           seal: Callable[[BinaryIO, BinaryIO], None] | None = None) -> Summary:
    """Write a backup of ``store`` to ``output``, a new 0600 file (never over an existing
    one); ``seal`` (from :mod:`mailslot.keep.sealing`) encrypts it as it is written."""
    if output == "-":
        raise InvalidInput("a backup needs a file (it is checked and never overwritten)")
    if not store.exists():
        raise NotFound(f"no mailbox at {store.location}")
    try:
        fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        raise InvalidInput(f"{output} exists already; a backup never overwrites") from None
    except OSError as exc:
        raise StoreError(f"cannot create {output}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as out:
            summary = _write(store, out, seal)
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(output)  # a backup cut short is not a backup
        raise
    return summary


def _write(store: Store, out: BinaryIO,
           seal: Callable[[BinaryIO, BinaryIO], None] | None) -> Summary:
    if seal is None:
        return _archive(store, out)
    # The tar is made in a thread and encrypted as it streams through a pipe: the
    # plain text never touches the disk.
    read_end, write_end = os.pipe()
    result: list[Summary] = []
    failure: list[BaseException] = []

    def produce() -> None:
        try:
            with os.fdopen(write_end, "wb") as pipe:
                result.append(_archive(store, pipe))
        except BaseException as exc:
            failure.append(exc)

    worker = threading.Thread(target=produce, name="mailslot-backup", daemon=True)
    worker.start()
    try:
        with os.fdopen(read_end, "rb") as pipe:
            seal(pipe, out)
    finally:
        worker.join()
    if failure:
        raise failure[0]
    return result[0]


def _archive(store: Store, out: IO[bytes]) -> Summary:
    summary = Summary()
    sums: dict[str, str] = {}
    now = time.time()
    with tarfile.open(fileobj=out, mode="w|gz", format=tarfile.PAX_FORMAT) as tar:
        def add(name: str, data: bytes) -> None:
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), int(now), 0o600
            tar.addfile(info, io.BytesIO(data))
            sums[name] = hashlib.sha256(data).hexdigest()

        for name, data in _records(store, summary):
            add(name, data)
        for name, data in snapshot(store, summary):
            add(name, data)
        manifest = {"format": FORMAT, "created": datetime.now(UTC).isoformat(),
                    "mailslot": __version__, "source": store.kind,
                    "counts": dict(+summary.counts), "files": sums}
        data = (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode("utf-8")
        info = tarfile.TarInfo(MANIFEST)
        info.size, info.mtime, info.mode = len(data), int(now), 0o600
        tar.addfile(info, io.BytesIO(data))
    return summary


def _records(store: Store, summary: Summary) -> Iterator[tuple[str, bytes]]:
    """Everything but the messages (seen sets, events, config, registered agents,
    gates, queued wakes, the session log), as the file store lays it out: copied by
    migrate's own code into a private scratch folder and read back from it."""
    scratch = tempfile.mkdtemp(prefix="mailslot-backup-")
    try:
        target = open_store(scratch)
        summary.counts.update(carry_records(store, target))
        for name in sorted(_files(scratch)):
            with open(os.path.join(scratch, name), "rb") as file:
                yield name, file.read()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _files(root: str) -> Iterator[str]:
    for top, dirs, files in os.walk(root):
        here = os.path.relpath(top, root)
        if here == ".":
            dirs[:] = [d for d in dirs if d not in _SKIPPED_TOP]
        for name in files:
            if name.endswith(".lock"):
                continue
            path = os.path.join(top, name)
            if os.path.isfile(path) and not os.path.islink(path):
                yield os.path.normpath(os.path.join(here, name))


def snapshot(store: Store, summary: Summary) -> Iterator[tuple[str, bytes]]:
    """Every message as ``(path in the file-store layout, file bytes)``, oldest first,
    consistent while agents keep writing (see the module docstring)."""
    held: dict[str, dict[str, State]] = {}
    for agent in store.agent_names():
        for message_id, state in store.entries(agent, STATES):  # new, cur, done: in order
            copies = held.setdefault(message_id, {})
            if STATES.index(state) >= STATES.index(copies.get(agent, "unread")):
                copies[agent] = state  # seen twice while it moved: the later state
    loaded: dict[str, Message] = {}
    waiting: dict[str, set[str]] = {}
    for message_id in sorted(held):
        message = _load_any(store, message_id, held[message_id], summary)
        if message is None:
            continue
        loaded[message_id] = message
        missing = set(message.to) - set(held[message_id])
        if missing:
            waiting[message_id] = missing
    _settle(store, held, loaded, waiting)
    _add_archived(store, held, loaded, summary)
    for message_id in sorted(loaded):
        data = to_bytes(loaded[message_id])
        for agent, state in sorted(held[message_id].items()):
            summary.counts["copies"] += 1
            yield f"agents/{agent}/{FOLDER_OF[state]}/{message_id}.md", data
        summary.counts["messages"] += 1
    for live, folder in ((True, "live"), (False, "retracted")):
        for message_id in sorted(store.broadcast_ids(live=live)):
            try:
                message, _ = store.load_broadcast(message_id)
            except Unreadable as exc:
                summary.skipped.append(f"broadcast/{message_id}: {exc}")
                continue
            except NotFound:
                continue  # retracted meanwhile: the retracted listing has it
            summary.counts["broadcasts"] += 1
            yield f"broadcast/{folder}/{message_id}.md", to_bytes(message)


def _add_archived(store: Store, held: dict[str, dict[str, State]],
                  loaded: dict[str, Message], summary: Summary) -> None:
    """The copies kept in month archives (``mailslot archive``), as the done copies they
    were: a backup holds every message, and its restore brings them back into
    ``done/`` (archive them again with ``mailslot archive``)."""
    for message_id in store.archived_ids():
        try:
            copies = store.archived(message_id)
        except (NotFound, Unreadable) as exc:
            summary.skipped.append(f"archive/{message_id}: {exc}")
            continue
        for agent, message in copies:
            if agent not in held.setdefault(message_id, {}):
                held[message_id][agent] = "done"
                loaded.setdefault(message_id, message)
                summary.counts["archived"] += 1


def _load_any(store: Store, message_id: str, copies: dict[str, State],
              summary: Summary) -> Message | None:
    """The message from the first copy that can still be read (a copy can vanish:
    a failed delivery rolled back, a message quarantined)."""
    for agent in sorted(copies):
        try:
            message, _ = store.load(agent, message_id)
            return message
        except NotFound:
            del copies[agent]
        except Unreadable as exc:
            summary.skipped.append(f"{agent}/{message_id}: {exc}")
            return None
    return None


def _settle(store: Store, held: dict[str, dict[str, State]], loaded: dict[str, Message],
            waiting: dict[str, set[str]]) -> None:
    """Look again for the copies a message's header names but the listing did not see,
    until each delivery has finished (or :data:`SETTLE_SECONDS` passed)."""
    deadline = time.monotonic() + SETTLE_SECONDS
    while waiting:
        for message_id in sorted(waiting):
            copies = held[message_id]
            for agent in sorted(waiting[message_id]):
                state = store.state_of(agent, message_id)
                if state is not None:
                    copies[agent] = state
                    waiting[message_id].discard(agent)
            for agent in sorted(copies):
                if store.state_of(agent, message_id) is None:
                    del copies[agent]  # rolled back (a failed delivery) or set aside
            if not copies:
                loaded.pop(message_id, None)
            if not waiting[message_id] or not copies:
                del waiting[message_id]
        if not waiting or time.monotonic() > deadline:
            return
        time.sleep(0.01)


# Restoring -----------------------------------------------------------------------------
def restore(source: str, target_location: str, *, merge: bool = False,
            unseal: Callable[[BinaryIO, BinaryIO], None] | None = None,
            max_bytes: int = MAX_ARCHIVE_BYTES, init: bool = False) -> Summary:
    """Check the backup at ``source`` whole, then copy it into the mailbox at
    ``target_location``: refused if that store is not empty, unless ``merge``, and if
    it is not a mailbox, unless ``init`` (:func:`~.transfer.check_target`)."""
    target = open_store(target_location)
    check_target(target, init=init)
    empty = is_empty(target)
    if not merge and not empty:
        raise Refused(f"{target.location} is not empty; restore adds to a mailbox only "
                      "with --merge (nothing there is overwritten)")
    if empty and target.folder is not None:
        return _whole(source, target.folder, unseal, max_bytes)
    staging = tempfile.mkdtemp(prefix="mailslot-restore-")  # 0700, private to the user
    try:
        unpacked = os.path.join(staging, "mailbox")
        _unpack(source, staging, unpacked, unseal, max_bytes)
        copied, skipped = migrate(unpacked, target.location, init=init)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    summary = Summary(copied, skipped)
    return summary


def _whole(source: str, root: str, unseal: Callable[[BinaryIO, BinaryIO], None] | None,
           max_bytes: int) -> Summary:
    """Restore into an empty folder: unpack and check beside it, then move the checked
    folder into place in one rename (the backup is the file store's layout already), so
    the folder is the backup exactly, and a failed check leaves nothing there."""
    parent, name = os.path.split(os.path.abspath(root))
    try:
        os.makedirs(parent, mode=0o700, exist_ok=True)
        staging = tempfile.mkdtemp(prefix=f".{name}.restoring-", dir=parent)
    except OSError as exc:
        raise StoreError(f"cannot restore into {root}: {exc.strerror or exc}") from None
    try:
        unpacked = os.path.join(staging, "mailbox")
        manifest = _unpack(source, staging, unpacked, unseal, max_bytes)
        os.sync()  # every unpacked file durable before the rename makes it the mailbox
        try:
            if os.path.isdir(root) and not os.path.islink(root):
                os.rmdir(root)  # empty (checked above); a file put there meanwhile stays
            os.rename(unpacked, root)
        except OSError as exc:
            raise StoreError(f"cannot restore into {root}: {exc.strerror or exc} "
                             "(nothing was restored)") from None
        fsync_dir(parent)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    files = manifest["files"]
    assert isinstance(files, dict)  # checked by _manifest
    return Summary(restored_counts(sorted(files)))


def restored_counts(names: Sequence[str]) -> Counter[str]:
    """What a restore that placed the files ``names`` did, counted from the files
    themselves (never from the counts a manifest claims)."""
    counts: Counter[str] = Counter(files=len(names))
    messages = set()
    for name in names:
        parts = name.split("/")
        if parts[0] == "agents":
            counts["copies"] += 1
            messages.add(parts[-1])
        elif parts[0] == "broadcast" and parts[1] in ("live", "retracted"):
            counts["broadcasts"] += 1
        elif parts[0] == "registry":
            counts["registrations"] += 1
        elif name == "config.json":
            counts["config"] += 1
    counts["messages"] = len(messages)
    return +counts


def is_empty(store: Store) -> bool:
    """No mail, broadcast, event, config or registration (and, for a folder, nothing in
    it at all: a restore never mixes a mailbox into a folder of other files)."""
    if store.folder is not None:
        try:
            return not os.listdir(store.folder)
        except FileNotFoundError:
            return True
        except OSError as exc:
            raise StoreError(f"cannot list {store.folder}: {exc.strerror}") from None
    if not store.exists():
        return True
    return not (store.agent_names() or store.broadcast_ids()
                or store.broadcast_ids(live=False) or store.registered_agents()
                or store.load_config() or next(store.events(), None) is not None)


def verify(source: str, *, unseal: Callable[[BinaryIO, BinaryIO], None] | None = None,
           max_bytes: int = MAX_ARCHIVE_BYTES) -> dict[str, object]:
    """Check a backup whole without restoring it; return its manifest."""
    staging = tempfile.mkdtemp(prefix="mailslot-verify-")
    try:
        return _unpack(source, staging, os.path.join(staging, "mailbox"), unseal,
                       max_bytes)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _unpack(source: str, staging: str, unpacked: str,
            unseal: Callable[[BinaryIO, BinaryIO], None] | None, max_bytes: int
            ) -> dict[str, object]:
    """Unpack ``source`` into ``unpacked`` and check every member against the manifest;
    a backup that fails any check is :class:`Refused` (the staging folder goes)."""
    try:
        raw = open(source, "rb")  # noqa: SIM115 (closed below; replaced when decrypted)
    except OSError as exc:
        raise InvalidInput(f"cannot read {source}: {exc.strerror or exc}") from None
    with raw:
        head = raw.read(64)
        raw.seek(0)
        if _sealed(head):
            if unseal is None:
                raise InvalidInput(f"{source} is encrypted: give --identity FILE or "
                                   "--passphrase")
            plain = os.path.join(staging, "backup.tar.gz")
            with open(plain, "xb") as out:
                unseal(raw, out)
            return _check(plain, source, unpacked, max_bytes)
        if unseal is not None:
            raise InvalidInput(f"{source} is not encrypted; drop --identity/--passphrase")
    return _check(source, source, unpacked, max_bytes)


def _sealed(head: bytes) -> bool:
    return head.startswith((b"age-encryption.org/", b"-----BEGIN AGE ENCRYPTED FILE"))


def _check(path: str, shown: str, unpacked: str, max_bytes: int) -> dict[str, object]:
    def refuse(why: str) -> Refused:
        return Refused(f"{shown} {why}: refused, nothing was restored")

    sums: dict[str, str] = {}
    manifest: dict[str, object] | None = None
    total = 0
    packed = os.path.getsize(path)
    message_limit = max_file_bytes(DEFAULT_MAX_BODY_BYTES)
    os.mkdir(unpacked, 0o700)
    try:
        with tarfile.open(path, mode="r|gz") as tar:
            for member in tar:
                if not member.isfile() or not (member.name == MANIFEST
                                               or is_kept_file(member.name)):
                    raise refuse(f"holds {quoted(member.name)}, which no mailbox holds")
                limit, what = _bound(member.name, message_limit)
                if member.size > limit:
                    raise refuse(f"holds {member.name} of {member.size} bytes, larger than "
                                 f"{what} may be ({limit})")
                total += member.size
                if total > max_bytes:
                    raise refuse(f"unpacks to more than {max_bytes} bytes (restore "
                                 "--max-bytes N allows more)")
                if total > MAX_RATIO * packed + RATIO_FLOOR:
                    raise refuse(f"unpacks to more than {MAX_RATIO} times its size and "
                                 f"{RATIO_FLOOR >> 20} MiB; no mailbox packs so tightly")
                reader = tar.extractfile(member)
                assert reader is not None  # a regular file
                if member.name in sums or manifest is not None:
                    raise refuse(f"holds {member.name} twice or after its manifest")
                if member.name == MANIFEST:
                    manifest = _manifest(reader.read(), refuse)
                    continue
                if not member.name.endswith(".md") and member.name != "config.json":
                    sums[member.name] = _place(unpacked, member.name, reader)
                    continue  # nothing to read in it: copied in chunks
                data = reader.read()
                why = _unreadable(member.name, data)
                if why:
                    raise refuse(f"holds {member.name}, {why}")
                if member.name == "config.json":
                    message_limit = _message_limit(data)
                sums[member.name] = _place(unpacked, member.name, io.BytesIO(data))
    except (tarfile.TarError, EOFError, OSError, UnicodeDecodeError, ValueError,
            RecursionError) as exc:
        raise refuse(f"is not a readable backup ({exc})") from None
    if manifest is None:
        raise refuse("has no manifest")
    expected = manifest["files"]
    assert isinstance(expected, dict)
    for name in sorted(expected):
        if not isinstance(name, str) or not is_kept_file(name):
            raise refuse(f"lists {quoted(str(name))} in its manifest, which no mailbox "
                         "holds")
    for name in sorted(set(expected) | set(sums)):
        if name not in sums:
            raise refuse(f"lacks {name}, which its manifest lists")
        if name not in expected:
            raise refuse(f"holds {name}, which its manifest does not list")
        if expected[name] != sums[name]:
            raise refuse(f"fails its checksum at {name}")
    return manifest


def _bound(name: str, message_limit: int) -> tuple[int, str]:
    """How large the member ``name`` may be, and what it is, for the refusal."""
    if name.endswith(".md"):
        return message_limit, "a message (max_body_bytes)"
    if name == "config.json":
        return MAX_CONFIG_BYTES, "a config"
    return MAX_MEMBER_BYTES, "any mailbox file"


def _message_limit(config: bytes) -> int:
    """The largest message file the backup's own config lets its mail be."""
    try:
        body = Config(json.loads(config)).max_body_bytes
    except MailslotError:
        body = DEFAULT_MAX_BODY_BYTES  # a malformed limit: the default (the config is kept)
    return max_file_bytes(max(body, DEFAULT_MAX_BODY_BYTES))


def _manifest(data: bytes, refuse: Callable[[str], Refused]) -> dict[str, object]:
    try:
        manifest = json.loads(data)
    except (ValueError, RecursionError):
        raise refuse("has a manifest that is not JSON") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT \
            or not isinstance(manifest.get("files"), dict):
        raise refuse(f"is not a {FORMAT} backup")
    return manifest


def _unreadable(name: str, data: bytes) -> str | None:
    """Why a member cannot be the file its path says it is (a message file the mailbox
    reader refuses, or under another id; a config that is not a JSON object), or
    ``None``. Checked before anything is restored: a backup is restored whole or not."""
    if name.endswith(".md"):
        try:
            message = from_bytes(data, name=name)
        except Unreadable as exc:
            return f"which is not a readable message ({exc})"
        if message.id != name.rsplit("/", 1)[1][:-3]:
            return "whose header names another id"
        if "\x00" in message.body:  # mailslot never stores one; PostgreSQL cannot
            return "whose body holds a NUL byte"
    elif name == "config.json":
        try:
            config = json.loads(data)
        except (ValueError, RecursionError):
            return "which is not JSON"
        if not isinstance(config, dict):
            return "which is not a JSON object"
    return None


def _place(root: str, name: str, source: IO[bytes]) -> str:
    """Copy ``source`` to the new file ``name`` under ``root`` in chunks; its SHA-256."""
    folder = os.path.join(root, *name.split("/")[:-1])
    os.makedirs(folder, mode=0o700, exist_ok=True)
    fd = os.open(os.path.join(root, name),
                 os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    digest = hashlib.sha256()
    with os.fdopen(fd, "wb") as out:
        while chunk := source.read(_CHUNK):
            digest.update(chunk)
            out.write(chunk)
    return digest.hexdigest()


def members(summary: Summary) -> Sequence[str]:
    """The counts as ``"N kind"`` phrases, for a one-line report."""
    return [f"{n} {kind}" for kind, n in sorted(summary.counts.items()) if n]
