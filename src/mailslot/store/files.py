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

import json
import os
import stat
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import NotFound, StoreError, UnsafePath
from ..message import STATES, Message, State, from_bytes, to_bytes
from .base import StoredFile
from .fs import (
    DIR_MODE,
    FILE_MODE,
    file_names,
    fsync_dir,
    not_followed,
    read_file,
    remove,
    store_error,
)
from .wakes import FileWakeQueue


class FileStore(FileWakeQueue):
    """The file store rooted at ``root`` (created on first write, 0700).

    What it shares with the hooks' lean view (listing, seen sets, events, config) comes
    from :class:`~mailslot.store.layout.MailboxFiles`; the wake queue's methods
    (``wake_*``) from :class:`FileWakeQueue`; every rule about touching a file from
    :mod:`~mailslot.store.fs`.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        super().__init__(str(Path(root).expanduser().absolute()))
        self.location = self.root

    # Writing -------------------------------------------------------------------
    def _place(self, message: Message, folders: Sequence[str]) -> None:
        """Stage once, link into every folder (never overwriting), sync each folder."""
        try:
            tmp = self._stage(to_bytes(message), message.id)
            try:
                for folder in folders:
                    os.link(tmp, os.path.join(folder, f"{message.id}.md"))
                    fsync_dir(folder)
            finally:
                remove(tmp)
        except FileExistsError:
            raise
        except OSError as exc:
            raise store_error(exc, f"cannot deliver {message.id}") from None

    def deliver(self, message: Message, recipients: Sequence[str]) -> None:
        for r in recipients:  # refuse a planted link before creating any recipient's folder
            self._box(r, "unread")
        self._place(message, [self._box(r, "unread", create=True) for r in recipients])

    def publish(self, message: Message) -> None:
        self._place(message, [self._folder("broadcast", "live", create=True)])

    # Reading -------------------------------------------------------------------
    def _message_path(self, agent: str, state: State, message_id: str) -> str:
        return os.path.join(self._box(agent, state), f"{message_id}.md")

    def state_of(self, agent: str, message_id: str) -> State | None:
        for state in STATES:
            if os.path.lexists(self._message_path(agent, state, message_id)):
                return state
        return None

    def path_of(self, agent: str, message_id: str) -> str | None:
        state = self.state_of(agent, message_id)
        if state is None:
            return None
        return self._message_path(agent, state, message_id)

    def load(self, agent: str, message_id: str, *, header_only: bool = False
             ) -> tuple[Message, State]:
        # A concurrent rename can move the file between our look and our open: retry.
        for _ in range(5):
            state = self.state_of(agent, message_id)
            if state is None:
                break
            path = self._message_path(agent, state, message_id)
            try:
                data = read_file(path, header_only=header_only)
            except FileNotFoundError:
                continue
            return from_bytes(data, name=path, header_only=header_only), state
        raise NotFound(f"no message {message_id} for {agent}")

    def move(self, agent: str, message_id: str, to: State) -> State:
        order = STATES.index(to)
        for _ in range(5):
            state = self.state_of(agent, message_id)
            if state is None:
                raise NotFound(f"no message {message_id} for {agent}")
            if STATES.index(state) >= order:
                return state
            source = self._message_path(agent, state, message_id)
            target = os.path.join(self._box(agent, to, create=True), f"{message_id}.md")
            if os.path.islink(source):
                raise not_followed(source)
            try:
                os.rename(source, target)
                return state
            except FileNotFoundError:
                continue  # another process moved it first; look again
            except OSError as exc:
                raise store_error(exc, f"cannot move {message_id}") from None
        raise NotFound(f"no message {message_id} for {agent}")

    # Broadcasts ----------------------------------------------------------------
    def load_broadcast(self, message_id: str, *, header_only: bool = False
                       ) -> tuple[Message, bool]:
        for _ in range(5):
            for live, folder in ((True, "live"), (False, "retracted")):
                path = os.path.join(self._folder("broadcast", folder), f"{message_id}.md")
                try:
                    data = read_file(path, header_only=header_only)
                except FileNotFoundError:
                    continue
                return from_bytes(data, name=path, header_only=header_only), live
        raise NotFound(f"no broadcast {message_id}")

    def retract(self, message_id: str) -> bool:
        live = self._folder("broadcast", "live", create=True)
        source = os.path.join(live, f"{message_id}.md")
        target = os.path.join(self._folder("broadcast", "retracted", create=True),
                              f"{message_id}.md")
        try:
            os.rename(source, target)
        except FileNotFoundError:
            if os.path.lexists(target):
                return False
            raise NotFound(f"no broadcast {message_id}") from None
        fsync_dir(live)
        return True

    def archive_mailbox(self, agent: str, stamp: str) -> str:
        """Move ``agent``'s mailbox whole to ``archive/<agent>-<stamp>`` (one rename,
        nothing deleted); a later message to ``agent`` makes a fresh mailbox."""
        source = self._folder("agents", agent)
        if not os.path.isdir(source) or os.path.islink(source):
            raise NotFound(f"no mailbox for {agent}")
        target = os.path.join(self._folder("archive", create=True), f"{agent}-{stamp}")
        if os.path.lexists(target):
            raise StoreError(f"{target} exists already; try again in a second")
        try:
            os.rename(source, target)
        except OSError as exc:
            raise store_error(exc, f"cannot archive {source}") from None
        fsync_dir(os.path.dirname(source))
        self._forget_folders(source)
        return target

    # Everything else -----------------------------------------------------------
    def agent_names(self) -> list[str]:
        folder = self._folder("agents")
        try:
            with os.scandir(folder) as it:
                return sorted(e.name for e in it if e.is_dir(follow_symlinks=False))
        except FileNotFoundError:
            return []

    def events(self) -> Iterator[dict[str, Any]]:
        path = os.path.join(self._folder("log"), "events.jsonl")
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

    def save_config(self, config: Mapping[str, Any]) -> None:
        data = (json.dumps(config, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
        try:
            tmp = self._stage(data, "config.json")
            os.rename(tmp, os.path.join(self.root, "config.json"))
            fsync_dir(self.root)
        except OSError as exc:
            raise store_error(exc, "cannot save config.json") from None

    def staging(self) -> list[StoredFile]:
        """Regular files in ``tmp/`` only: anything else there is not mailslot's."""
        folder = self._folder("tmp")
        now = time.time()
        found: list[StoredFile] = []
        for name in file_names(folder):
            path = os.path.join(folder, name)
            try:
                found.append(StoredFile(path, now - os.lstat(path).st_mtime))
            except FileNotFoundError:
                continue  # its writer finished with it meanwhile
        return found

    def remove_staging(self, item: StoredFile) -> None:
        """Delete one staging file, if it still is one (never a folder, never through a link)."""
        try:
            info = os.lstat(item.path)
        except FileNotFoundError:
            return
        if not stat.S_ISREG(info.st_mode):
            raise UnsafePath(f"{item.path} is not a staging file; left alone")
        try:
            remove(item.path)
        except OSError as exc:
            raise store_error(exc, f"cannot remove {item.path}") from None

    def _walk(self) -> Iterator[tuple[str, os.stat_result]]:
        if not os.path.isdir(self.root):
            return
        yield self.root, os.stat(self.root)
        for top, dirs, files in os.walk(self.root):
            for name in dirs + files:
                path = os.path.join(top, name)
                try:
                    yield path, os.lstat(path)
                except FileNotFoundError:
                    continue  # removed meanwhile (a staging file, a moved message)

    def problems(self) -> list[str]:
        found: list[str] = []
        staging = os.path.join(self.root, "tmp")
        for path, info in self._walk():
            if stat.S_ISLNK(info.st_mode):
                found.append(f"{path} is a symlink; mailslot never follows it (remove it)")
                continue
            if os.path.dirname(path) == staging and not stat.S_ISREG(info.st_mode):
                found.append(f"{path} is not a staging file; mailslot leaves it alone "
                             "(remove it if nothing needs it)")
            elif not stat.S_ISREG(info.st_mode) and not stat.S_ISDIR(info.st_mode):
                found.append(f"{path} is not a regular file; mailslot never reads it "
                             "(remove it)")
            if info.st_mode & 0o077:
                found.append(
                    f"{path} is open to other users (mode {stat.S_IMODE(info.st_mode):o})"
                )
            elif stat.S_ISREG(info.st_mode) and os.path.splitext(path)[1] == ".md":
                try:
                    from_bytes(read_file(path), name=path)
                except (StoreError, UnsafePath) as exc:  # UnsafePath: swapped since listed
                    found.append(str(exc))
                except FileNotFoundError:
                    continue  # moved meanwhile (marked read or done)
        return found

    def fix_permissions(self) -> int:
        changed = 0
        for path, info in self._walk():
            if stat.S_ISLNK(info.st_mode) or not info.st_mode & 0o077:
                continue
            try:
                os.chmod(path, DIR_MODE if stat.S_ISDIR(info.st_mode) else FILE_MODE)
            except FileNotFoundError:
                continue  # removed meanwhile
            changed += 1
        return changed

    # Presence (running MCP servers; see mailslot.presence) ----------------------
    # presence/<agent>/<key>.json, one small JSON object per running server, replaced
    # whole (tmp + rename) on every heartbeat so a reader never sees half a record.
    def write_presence(self, agent: str, key: str, record: Mapping[str, Any]) -> None:
        data = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
        try:
            tmp = self._stage(data, f"presence-{agent}-{key}")
            os.rename(tmp, os.path.join(self._folder("presence", agent, create=True),
                                        f"{key}.json"))
        except OSError as exc:
            raise store_error(exc, f"cannot record presence of {agent}") from None

    def presence(self) -> list[dict[str, Any]]:
        folder = self._folder("presence")
        found: list[dict[str, Any]] = []
        try:
            with os.scandir(folder) as agents:
                boxes = [e.name for e in agents if e.is_dir(follow_symlinks=False)]
        except FileNotFoundError:
            return found
        for agent in sorted(boxes):
            names = file_names(os.path.join(folder, agent))
            for name in sorted(n for n in names if n.endswith(".json") and n[0] != "."):
                try:
                    record = json.loads(read_file(os.path.join(folder, agent, name)))
                except (OSError, ValueError, UnsafePath):
                    continue  # vanished, half-planted or not ours: not a running server
                if isinstance(record, dict):
                    found.append({**record, "agent": agent, "key": name[:-5]})
        return found

    def remove_presence(self, agent: str, key: str) -> None:
        path = os.path.join(self._folder("presence", agent), f"{key}.json")
        try:
            remove(path)
        except OSError as exc:
            raise store_error(exc, f"cannot remove {path}") from None

    # Watching ------------------------------------------------------------------------
    def arrivals_path(self, agent: str) -> str | None:
        return self._box(agent, "unread", create=True)
