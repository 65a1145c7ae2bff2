"""The embedded store: a Maildir-style folder of Markdown files.

Layout (see docs/format.md)::

    config.json
    agents/<name>/{new,cur,done}/<id>.md
    broadcast/{live,retracted}/<id>.md
    broadcast/seen/<name>
    tmp/
    log/events.jsonl
    wake/{pending,claimed,locks}/   the wake queue (see store/wakes.py)

Crash safety comes from three habits: a file is written whole in ``tmp/`` and synced
before it is linked into place (readers never see half a file); a state change is one
rename (a crash leaves the old state, so mail is shown again, never lost); a message file
is never rewritten. Nothing inside the root follows a symlink.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import stat
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import NotFound, StoreError, UnsafePath
from ..ids import ids_of_files
from ..message import STATES, Message, State, from_bytes, to_bytes
from .base import Event, StoredFile
from .wakes import FileWakeQueue

FOLDER_OF: dict[State, str] = {"unread": "new", "read": "cur", "done": "done"}
_DIR_MODE = 0o700
_FILE_MODE = 0o600
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_APPEND_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_HEAD_CHUNK = 4096


def _os_error(exc: OSError, what: str) -> StoreError:
    """One line for a failed file operation, naming the cause a user can fix."""
    if exc.errno == errno.ENOSPC:
        return StoreError(f"{what}: the disk is full; nothing was written")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return StoreError(f"{what}: permission denied ({exc.filename})")
    return StoreError(f"{what}: {exc.strerror or exc}")


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_file(path: Path, *, header_only: bool = False) -> bytes:
    """A whole file (or just enough for its header), refusing to follow a symlink."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafePath(f"{path} is a symlink; mailslot does not follow links") from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafePath(f"{path} is not a regular file")
        chunks: list[bytes] = []
        while chunk := os.read(fd, _HEAD_CHUNK if header_only else 1 << 20):
            chunks.append(chunk)
            if header_only and b"\n---\n" in b"".join(chunks)[3:]:
                break
        return b"".join(chunks)
    finally:
        os.close(fd)


class FileStore(FileWakeQueue):
    """The file store rooted at ``root`` (created on first write, 0700).

    The wake queue's methods (``wake_*``) come from :class:`FileWakeQueue`.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).expanduser().absolute()
        self.location = str(self.root)
        self._checked: set[Path] = set()
        self._folders: dict[tuple[str, ...], Path] = {}

    # Folders -------------------------------------------------------------------
    def _dir(self, *parts: str, create: bool = True) -> Path:
        """A folder under the root, each part checked to be a real folder (not a link)."""
        known = self._folders.get(parts)
        if known is not None:  # checked before by this process (send's hot path)
            return known
        path = self.root
        if create and path not in self._checked:
            path.mkdir(mode=_DIR_MODE, parents=True, exist_ok=True)
            self._checked.add(path)
        for part in parts:
            path = path / part
            if path in self._checked:
                continue
            try:
                info = os.lstat(path)
            except FileNotFoundError:
                if not create:
                    return path
                try:
                    os.mkdir(path, _DIR_MODE)
                except FileExistsError:
                    pass
                except OSError as exc:
                    raise _os_error(exc, f"cannot create {path}") from None
                info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                raise UnsafePath(f"{path} is a symlink; mailslot does not follow links")
            if not stat.S_ISDIR(info.st_mode):
                raise UnsafePath(f"{path} should be a folder")
            self._checked.add(path)
        self._folders[parts] = path
        return path

    def _box(self, agent: str, state: State, *, create: bool = True) -> Path:
        return self._dir("agents", agent, FOLDER_OF[state], create=create)

    # Writing -------------------------------------------------------------------
    def _stage(self, data: bytes, name: str) -> Path:
        """Write ``data`` to a fresh file in tmp/ and sync it."""
        tmp = self._dir("tmp") / f"{name}.{os.getpid()}.{secrets.token_hex(4)}"
        fd = os.open(tmp, _CREATE_FLAGS, _FILE_MODE)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            tmp.unlink(missing_ok=True)
            raise
        os.close(fd)
        return tmp

    def _place(self, message: Message, folders: Sequence[Path]) -> None:
        """Stage once, link into every folder (never overwriting), sync each folder."""
        try:
            tmp = self._stage(to_bytes(message), message.id)
            try:
                for folder in folders:
                    os.link(tmp, folder / f"{message.id}.md")
                    fsync_dir(folder)
            finally:
                tmp.unlink(missing_ok=True)
        except FileExistsError:
            raise
        except OSError as exc:
            raise _os_error(exc, f"cannot deliver {message.id}") from None

    def deliver(self, message: Message, recipients: Sequence[str]) -> None:
        for r in recipients:  # refuse a planted link before creating any recipient's folder
            self._box(r, "unread", create=False)
        self._place(message, [self._box(r, "unread") for r in recipients])

    def publish(self, message: Message) -> None:
        self._place(message, [self._dir("broadcast", "live")])

    # Reading -------------------------------------------------------------------
    @staticmethod
    def _ids_in(folder: Path) -> list[str]:
        try:
            with os.scandir(folder) as it:
                names = [e.name for e in it if e.is_file(follow_symlinks=False)]
        except (FileNotFoundError, NotADirectoryError):
            return []
        return ids_of_files(names)

    def entries(self, agent: str, states: Iterable[State]) -> list[tuple[str, State]]:
        found: list[tuple[str, State]] = []
        for state in states:
            folder = self._box(agent, state, create=False)
            found.extend((i, state) for i in self._ids_in(folder))
        return found

    def state_of(self, agent: str, message_id: str) -> State | None:
        for state in STATES:
            path = self._box(agent, state, create=False) / f"{message_id}.md"
            if os.path.lexists(path):
                return state
        return None

    def path_of(self, agent: str, message_id: str) -> str | None:
        state = self.state_of(agent, message_id)
        if state is None:
            return None
        return str(self._box(agent, state, create=False) / f"{message_id}.md")

    def load(self, agent: str, message_id: str, *, header_only: bool = False
             ) -> tuple[Message, State]:
        # A concurrent rename can move the file between our look and our open: retry.
        for _ in range(5):
            state = self.state_of(agent, message_id)
            if state is None:
                break
            path = self._box(agent, state, create=False) / f"{message_id}.md"
            try:
                data = read_file(path, header_only=header_only)
            except FileNotFoundError:
                continue
            return from_bytes(data, name=str(path), header_only=header_only), state
        raise NotFound(f"no message {message_id} for {agent}")

    def move(self, agent: str, message_id: str, to: State) -> State:
        order = STATES.index(to)
        for _ in range(5):
            state = self.state_of(agent, message_id)
            if state is None:
                raise NotFound(f"no message {message_id} for {agent}")
            if STATES.index(state) >= order:
                return state
            source = self._box(agent, state, create=False) / f"{message_id}.md"
            target = self._box(agent, to) / f"{message_id}.md"
            if os.path.islink(source):
                raise UnsafePath(f"{source} is a symlink; mailslot does not follow links")
            try:
                os.rename(source, target)
                return state
            except FileNotFoundError:
                continue  # another process moved it first; look again
            except OSError as exc:
                raise _os_error(exc, f"cannot move {message_id}") from None
        raise NotFound(f"no message {message_id} for {agent}")

    # Broadcasts ----------------------------------------------------------------
    def broadcast_ids(self, *, live: bool = True) -> list[str]:
        return self._ids_in(self._dir("broadcast", "live" if live else "retracted", create=False))

    def load_broadcast(self, message_id: str, *, header_only: bool = False
                       ) -> tuple[Message, bool]:
        for _ in range(5):
            for live, folder in ((True, "live"), (False, "retracted")):
                path = self._dir("broadcast", folder, create=False) / f"{message_id}.md"
                try:
                    data = read_file(path, header_only=header_only)
                except FileNotFoundError:
                    continue
                return from_bytes(data, name=str(path), header_only=header_only), live
        raise NotFound(f"no broadcast {message_id}")

    def retract(self, message_id: str) -> bool:
        source = self._dir("broadcast", "live") / f"{message_id}.md"
        target = self._dir("broadcast", "retracted") / f"{message_id}.md"
        try:
            os.rename(source, target)
        except FileNotFoundError:
            if os.path.lexists(target):
                return False
            raise NotFound(f"no broadcast {message_id}") from None
        fsync_dir(source.parent)
        return True

    def seen(self, agent: str) -> set[str]:
        path = self._dir("broadcast", "seen", create=False) / agent
        try:
            return set(read_file(path).decode("utf-8", "replace").split())
        except FileNotFoundError:
            return set()

    def add_seen(self, agent: str, message_ids: Sequence[str]) -> None:
        if message_ids:
            self._append(self._dir("broadcast", "seen") / agent,
                         "".join(f"{i}\n" for i in message_ids), sync=True)

    # Everything else -----------------------------------------------------------
    def agent_names(self) -> list[str]:
        folder = self._dir("agents", create=False)
        try:
            with os.scandir(folder) as it:
                return sorted(e.name for e in it if e.is_dir(follow_symlinks=False))
        except FileNotFoundError:
            return []

    def _append(self, path: Path, text: str, *, sync: bool) -> None:
        """One write with O_APPEND, so concurrent lines never interleave."""
        try:
            fd = os.open(path, _APPEND_FLAGS, _FILE_MODE)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise UnsafePath(f"{path} is a symlink; mailslot does not follow links") from None
            raise _os_error(exc, f"cannot write {path}") from None
        try:
            os.write(fd, text.encode("utf-8"))
            if sync:
                os.fsync(fd)
        except OSError as exc:
            raise _os_error(exc, f"cannot write {path}") from None
        finally:
            os.close(fd)

    def append_event(self, event: Event) -> None:
        line = json.dumps(event, ensure_ascii=False, separators=(",", ":")) + "\n"
        self._append(self._dir("log") / "events.jsonl", line, sync=False)

    def events(self) -> Iterator[dict[str, Any]]:
        path = self._dir("log", create=False) / "events.jsonl"
        try:
            data = read_file(path)
        except FileNotFoundError:
            return
        for line in data.decode("utf-8", "replace").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a line cut by a crash; the folders still hold the truth
            if isinstance(record, dict):
                yield record

    def load_config(self) -> dict[str, Any]:
        path = self.root / "config.json"
        try:
            data = read_file(path)
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise _os_error(exc, f"cannot read {path}") from None
        try:
            config = json.loads(data.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            raise StoreError(f"{path} is not valid JSON ({exc}); fix or remove it") from None
        if not isinstance(config, dict):
            raise StoreError(f"{path} must hold a JSON object")
        return config

    def save_config(self, config: Mapping[str, Any]) -> None:
        data = (json.dumps(config, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
        try:
            tmp = self._stage(data, "config.json")
            os.rename(tmp, self.root / "config.json")
            fsync_dir(self.root)
        except OSError as exc:
            raise _os_error(exc, "cannot save config.json") from None

    def staging(self) -> list[StoredFile]:
        folder = self._dir("tmp", create=False)
        now = time.time()
        try:
            with os.scandir(folder) as it:
                return [
                    StoredFile(e.path, now - e.stat(follow_symlinks=False).st_mtime)
                    for e in it
                ]
        except FileNotFoundError:
            return []

    def remove_staging(self, item: StoredFile) -> None:
        Path(item.path).unlink(missing_ok=True)

    def _walk(self) -> Iterator[tuple[Path, os.stat_result]]:
        if not self.root.is_dir():
            return
        yield self.root, os.stat(self.root)
        for top, dirs, files in os.walk(self.root):
            for name in dirs + files:
                path = Path(top) / name
                yield path, os.lstat(path)

    def problems(self) -> list[str]:
        found: list[str] = []
        for path, info in self._walk():
            if stat.S_ISLNK(info.st_mode):
                found.append(f"{path} is a symlink; mailslot never follows it (remove it)")
            elif info.st_mode & 0o077:
                found.append(
                    f"{path} is open to other users (mode {stat.S_IMODE(info.st_mode):o})"
                )
            elif stat.S_ISREG(info.st_mode) and path.suffix == ".md":
                try:
                    from_bytes(read_file(path), name=str(path))
                except StoreError as exc:
                    found.append(str(exc))
        return found

    def fix_permissions(self) -> int:
        changed = 0
        for path, info in self._walk():
            if stat.S_ISLNK(info.st_mode) or not info.st_mode & 0o077:
                continue
            os.chmod(path, _DIR_MODE if stat.S_ISDIR(info.st_mode) else _FILE_MODE)
            changed += 1
        return changed

    # Presence (running MCP servers; see mailslot.presence) ----------------------
    # presence/<agent>/<key>.json, one small JSON object per running server, replaced
    # whole (tmp + rename) on every heartbeat so a reader never sees half a record.
    def write_presence(self, agent: str, key: str, record: Mapping[str, Any]) -> None:
        data = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
        try:
            tmp = self._stage(data, f"presence-{agent}-{key}")
            os.rename(tmp, self._dir("presence", agent) / f"{key}.json")
        except OSError as exc:
            raise _os_error(exc, f"cannot record presence of {agent}") from None

    def presence(self) -> list[dict[str, Any]]:
        folder = self._dir("presence", create=False)
        found: list[dict[str, Any]] = []
        try:
            with os.scandir(folder) as agents:
                boxes = [e.name for e in agents if e.is_dir(follow_symlinks=False)]
        except FileNotFoundError:
            return found
        for agent in sorted(boxes):
            for path in sorted((folder / agent).glob("*.json")):
                try:
                    record = json.loads(read_file(path))
                except (OSError, ValueError, UnsafePath):
                    continue  # vanished, half-planted or not ours: not a running server
                if isinstance(record, dict):
                    found.append({**record, "agent": agent, "key": path.stem})
        return found

    def remove_presence(self, agent: str, key: str) -> None:
        path = self._dir("presence", agent, create=False) / f"{key}.json"
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise _os_error(exc, f"cannot remove {path}") from None

    # Watching ------------------------------------------------------------------------
    def arrivals_path(self, agent: str) -> str | None:
        return str(self._box(agent, "unread"))
