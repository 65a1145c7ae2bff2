"""The embedded store: a Maildir-style folder of Markdown files.

Layout (see docs/format.md)::

    config.json
    agents/<name>/{new,cur,done}/<id>.md
    broadcast/{live,retracted}/<id>.md
    broadcast/seen/<name>
    tmp/
    log/events.jsonl
    wake/{pending,claimed,locks}/   the wake queue (see store/wakes.py)
    limits/<kind>.<name>            the loop governor's token buckets

Crash safety comes from three habits: a file is written whole in ``tmp/`` and synced
before it is linked into place (readers never see half a file); a state change is one
rename (a crash leaves the old state, so mail is shown again, never lost); a message file
is never rewritten. Nothing inside the root follows a symlink.
"""

from __future__ import annotations

import os
import stat
import time

from ...core import jsontext
from ...core.durable import FILE_MODE, fsync_dir, not_followed, open_file, remove, unsafe_owner
from ...core.errors import IdTaken, MailslotError, NotFound, StoreError, Unreadable, UnsafePath
from ...core.ids import sender_of
from ...core.message import STATES, to_bytes
from ...core.names import is_valid_name
from ...store.format import FOLDER_OF, SESSIONS, event_segments
from . import kept_listing, unindexed
from .fences import FenceFiles
from .fs import (
    APPEND,
    DIR_MODE,
    FileLock,
    append,
    file_names,
    lines_from_end,
    read_file,
    store_error,
    translated,
)
from .gate_files import GateFiles
from .layout import OPEN
from .limit_files import LimitFiles
from .registry_files import RegistryFiles
from .session_files import SessionFiles
from .tally_files import TallyFiles
from .wake_files import FileWakeQueue

TYPE_CHECKING = False  # on the hook path: no typing, pathlib or dataclasses at load time
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping, Sequence
    from typing import Any

    from ...core.message import Message, State
    from ...core.query import Search
    from ...store.records import StoredFile, Watching
    from .archive_files import MonthArchives
    from .search_index import SearchIndex


@translated
class FileStore(SessionFiles, FileWakeQueue, RegistryFiles, GateFiles, FenceFiles,
                LimitFiles, TallyFiles):
    """The file store rooted at ``root`` (created on first write, 0700).

    Built from parts side by side, one per role of :mod:`mailslot.store.roles`, each a
    direct subclass of the shared base in its own module: the layout and the one reader
    of message files (:class:`~mailslot.backends.files.layout.MailboxFiles`, the base of
    every part), the per-session delivery state
    (:class:`~mailslot.backends.files.session_files.SessionFiles`), the wake queue
    (:class:`~mailslot.backends.files.wake_files.FileWakeQueue`), the registered agents
    (:class:`~mailslot.backends.files.registry_files.RegistryFiles`), the gates
    (:class:`~mailslot.backends.files.gate_files.GateFiles`), replaced sessions
    (:class:`~mailslot.backends.files.fences.FenceFiles`) and the governor's token buckets
    (:class:`~mailslot.backends.files.limit_files.LimitFiles`), and the per-agent done
    counts (:class:`~mailslot.backends.files.tally_files.TallyFiles`); this class adds writing mail,
    broadcasts, the config's writer, upkeep, presence, watching, the session log,
    search and the month archives of done mail. Every rule about touching a file is in
    :mod:`~mailslot.backends.files.fs`. The session hooks use this same class: the whole
    file store loads no ``pathlib``, ``typing``, ``dataclasses`` or YAML at import.
    """

    kind = "files"

    def __init__(self, root: str | os.PathLike[str]) -> None:
        super().__init__(os.path.abspath(os.path.expanduser(os.fspath(root))))
        self.location = self.address = self.root
        self.folder: str | None = self.root
        self._index: SearchIndex | None = None
        self._archives: MonthArchives | None = None

    def clock(self) -> float:
        """This machine's clock: every process of a file store shares its machine (a
        folder shared over the network needs its machines' clocks kept in sync)."""
        return time.time()

    # Writing -------------------------------------------------------------------
    def _place(self, message: Message, folders: Sequence[tuple[str, str]]) -> None:
        """Stage once, link into every folder (never overwriting), sync each folder.

        ``folders`` pairs each folder with whose it is, for the error. All or nothing:
        if one link fails, the links already made are removed again, so a failed send
        leaves no copy anywhere (and the error names the folder that failed).
        """
        name = f"{message.id}.md"
        try:
            tmp = self._stage(to_bytes(message), message.id)
        except OSError as exc:
            raise store_error(exc, f"cannot stage {message.id}") from None
        made: list[str] = []
        try:
            for folder, owner in folders:
                target = os.path.join(folder, name)
                try:
                    os.link(tmp, target)
                except FileExistsError:
                    raise IdTaken(f"{message.id} is already taken in {owner}'s "
                                  "mailbox; nothing was written") from None
                except OSError as exc:
                    raise store_error(exc, f"cannot deliver {message.id} to {owner}"
                                      ) from None
                made.append(target)
                fsync_dir(folder)
        except BaseException:
            for target in made:  # roll back: a failed send leaves nothing
                _try_remove(target)
            raise
        finally:
            _try_remove(tmp)

    def deliver(self, message: Message, recipients: Sequence[str]) -> None:
        for r in recipients:  # refuse a planted link before creating any recipient's folder
            self._box(r, "unread")
        self._place(message, [(self._box(r, "unread", create=True), r) for r in recipients])
        unindexed.leave(self, message.id, recipients)
        self._noted(message.id, recipients)

    def publish(self, message: Message) -> None:
        self._place(message, [(self._folder("broadcast", "live", create=True), "broadcast")])
        unindexed.leave(self, message.id, [unindexed.BROADCAST])
        self._noted(message.id, [])

    def _noted(self, message_id: str, recipients: Sequence[str]) -> None:
        """Note a delivered message in the tallies and the sender's index: best effort,
        after the fact (the message is delivered; these are caches that ``doctor
        --deep`` builds again), so a failure here never fails the send."""
        sender = sender_of(message_id)
        try:
            for r in recipients:
                self.note_sender(r, sender)
            self.note_sent(sender, message_id)
        except (OSError, MailslotError):
            return

    # Reading (load, load_broadcast, state_of: the shared reader in store/files/layout.py) --
    def path_of(self, agent: str, message_id: str) -> str | None:
        state = self.state_of(agent, message_id)
        if state is None:
            return None
        return self._message_path(agent, state, message_id)

    def move(self, agent: str, message_id: str, to: State) -> State:
        if to != "done":
            return self._move(agent, message_id, to)[0]
        return self.with_tally(agent, lambda: self._move(agent, message_id, to))

    def _move(self, agent: str, message_id: str, to: State) -> tuple[State, int]:
        """Move it; return its old state and how many files went into ``done/``."""
        order = STATES.index(to)
        for _ in range(5):
            state = self.state_of(agent, message_id)
            if state is None:
                raise NotFound(f"no message {message_id} for {agent}")
            if STATES.index(state) >= order:
                return state, 0
            source = self._message_path(agent, state, message_id)
            target = os.path.join(self._box(agent, to, create=True), f"{message_id}.md")
            if os.path.islink(source):
                raise not_followed(source)
            try:
                os.rename(source, target)
            except FileNotFoundError:
                continue  # another process moved it first; look again
            except OSError as exc:
                raise store_error(exc, f"cannot move {message_id}") from None
            try:
                _sync_rename(source, target)
            except OSError as exc:
                raise store_error(exc, f"cannot sync the move of {message_id}") from None
            return state, 1 if to == "done" else 0
        raise NotFound(f"no message {message_id} for {agent}")

    # Broadcasts ----------------------------------------------------------------
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
        _sync_rename(source, target)
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
        self._forget_folders()
        self.forget_tally(agent)
        return target

    # Everything else -----------------------------------------------------------
    def agent_names(self) -> list[str]:
        folder = self._folder("agents")
        try:
            with os.scandir(folder) as it:
                return sorted(e.name for e in it if e.is_dir(follow_symlinks=False))
        except FileNotFoundError:
            return []

    def events(self, *, newest_first: bool = False) -> Iterator[dict[str, Any]]:
        folder = self._folder("log")
        segments = event_segments(file_names(folder))
        for name in reversed(segments) if newest_first else segments:
            path = os.path.join(folder, name)
            try:  # newest first: from the end, so a reader stopping early reads little
                lines = lines_from_end(path) if newest_first else \
                    read_file(path).splitlines()
            except FileNotFoundError:
                continue  # rolled meanwhile: its lines are in the next numbered segment
            except OSError as exc:
                raise store_error(exc, "cannot read the events log") from None
            for line in lines:
                try:
                    record = jsontext.loads(line.decode("utf-8", "replace"))
                except ValueError:
                    continue  # a line cut by a crash; the folders still hold the truth
                if isinstance(record, dict):
                    yield record

    def update_config(self, change: Callable[[dict[str, Any]], bool]) -> bool:
        """Read, ``change`` in place, save if it says it changed: under ``config.lock``,
        so two edits at once (two ``install --wake``) both land."""
        with FileLock(os.path.join(self._folder(create=True), "config.lock"), "the config"):
            config = self.load_config()
            changed = change(config)
            if changed:
                self._save_config(config)
            return changed

    def _save_config(self, config: Mapping[str, Any]) -> None:
        """Replace config.json atomically; only :meth:`update_config` calls it, holding
        the lock."""
        import json  # indented: json's own writer (a config is saved rarely)

        data = (json.dumps(config, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
        try:
            tmp = self._stage(data, "config.json")
            os.rename(tmp, os.path.join(self.root, "config.json"))
            fsync_dir(self.root)
        except OSError as exc:
            raise store_error(exc, "cannot save config.json") from None

    def staging(self) -> list[StoredFile]:
        """Regular files in ``tmp/`` only: anything else there is not mailslot's."""
        from ...store.records import StoredFile

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

    def _walk(self, found: list[str], *, deep: bool = True
              ) -> Iterator[tuple[str, os.stat_result]]:
        """Every path in the mailbox with its ``lstat``; a folder that cannot be listed
        is added to ``found`` rather than skipped in silence. Without ``deep``: of each
        folder's files only the newest :data:`NEWEST` by name (ids sort by time; of an
        open mail folder that did not change, by its kept listing, so it is not
        listed), and the folders that keep history (:data:`HISTORY`: done mail,
        archives, the quarantine, the once-marks) are checked themselves but not
        listed: what they hold only grows, and ``doctor`` by default stays as fast at
        a million messages as at a hundred."""
        try:
            info = os.stat(self.root)
        except FileNotFoundError:
            return
        yield self.root, info

        def unlisted(exc: OSError) -> None:
            found.append(f"{exc.filename} cannot be read ({exc.strerror}); mailslot cannot "
                         "see what is in it (check its owner and mode)")

        open_mail: list[tuple[str, State]] = []  # (agent, state): from kept listings
        for top, dirs, files in os.walk(self.root, onerror=unlisted):
            names = dirs + files
            if not deep:  # each folder itself is looked at; history is not gone into
                inside = top[len(self.root) + 1:].split(os.sep) if top != self.root else []
                dirs[:] = [d for d in dirs if not _keeps_history([*inside, d])]
                if len(inside) == 2 and inside[0] == "agents":
                    open_mail += [(inside[1], s) for s in OPEN if FOLDER_OF[s] in dirs]
                    dirs[:] = [d for d in dirs if d not in OPEN_FOLDERS]
                if len(files) > NEWEST:
                    names = names[:len(names) - len(files)] + sorted(files)[-NEWEST:]
            yield from _lstat_each(top, names)
        for agent, state in open_mail:
            try:
                folder = self._box(agent, state)
                newest = self._newest_open(agent, state, folder)
            except FileNotFoundError:
                continue  # removed meanwhile
            except OSError as exc:
                unlisted(exc)
                continue
            except MailslotError:
                continue  # a planted link: the walk above named it
            yield from _lstat_each(folder, newest)

    def _newest_open(self, agent: str, state: State, folder: str) -> list[str]:
        """The newest :data:`NEWEST` names in an open mail folder: from its kept listing
        when the folder did not change since (one is kept only of a folder holding
        message files alone; an agent that never marks mail done keeps thousands in
        ``cur/``), else from listing it whole, strays and all."""
        if is_valid_name(agent):
            ids = self._open_listing(agent, state)[1]  # kept, or listed and kept if it can be
            stamp = kept_listing.stamp_of(folder)
            if stamp is not None and \
                    kept_listing.read_kept(self._kept_path(agent, state), stamp, 0) is not None:
                return [f"{i}.md" for i in ids[-NEWEST:]]  # a kept folder holds ids alone
        return sorted(os.listdir(folder))[-NEWEST:]

    def problems(self, *, deep: bool = False) -> list[str]:
        """Links, odd files, owners and modes, tallies that disagree with their folder,
        and an events log that cannot be written: from ``lstat`` alone, without reading
        a message; the history folders' files only with ``deep`` (see :meth:`_walk`)."""
        found: list[str] = []
        staged = os.path.join(self.root, "tmp", "")  # a file right in it: no further sep
        me = os.geteuid()
        for path, info in self._walk(found, deep=deep):
            if path == self.root:
                why = unsafe_owner(path, info)
                if why is None and info.st_mode & 0o077:
                    why = (f"{path} is open to other users (mode "
                           f"{stat.S_IMODE(info.st_mode):o}): they can list its agents "
                           "and messages; `mailslot doctor --fix` sets it to 700")
                if why is not None:
                    found.append(why)
                continue
            if stat.S_ISLNK(info.st_mode):
                found.append(f"{path} is a symlink; mailslot never follows it (remove it)")
                continue
            if path.startswith(staged) and os.sep not in path[len(staged):] \
                    and not stat.S_ISREG(info.st_mode):
                found.append(f"{path} is not a staging file; mailslot leaves it alone "
                             "(remove it if nothing needs it)")
            elif not stat.S_ISREG(info.st_mode) and not stat.S_ISDIR(info.st_mode):
                found.append(f"{path} is not a regular file; mailslot never reads it "
                             "(remove it)")
            needed = DIR_MODE if stat.S_ISDIR(info.st_mode) else FILE_MODE
            if info.st_uid != me:
                found.append(f"{path} belongs to another user (uid {info.st_uid}); "
                             "mailslot cannot trust or change it")
            elif info.st_mode & 0o077:
                found.append(
                    f"{path} is open to other users (mode {stat.S_IMODE(info.st_mode):o})"
                )
            elif info.st_mode & needed != needed:
                found.append(f"{path} cannot be used by mailslot (mode "
                             f"{stat.S_IMODE(info.st_mode):o}; `mailslot doctor --fix` "
                             "sets it back)")
        found.extend(self._events_problems())
        found.extend(self.tally_problems(self.agent_names(), deep=deep))
        return found

    def _events_problems(self) -> list[str]:
        """Can a receipt be added to the events log? (Sends succeed without it.)"""
        path = os.path.join(self.root, "log", "events.jsonl")
        if not os.path.lexists(path):
            return []
        try:
            os.close(open_file(path, APPEND))
        except (OSError, UnsafePath) as exc:
            cause = exc.strerror if isinstance(exc, OSError) else str(exc)
            return [f"{path} cannot be written ({cause}); receipts and status are lost "
                    "until it is fixed"]
        return []

    def unreadable(self) -> list[tuple[str | None, str, str]]:
        """Every stored message that cannot be read: ``(agent, id, why)``, ``agent`` is
        ``None`` for a broadcast. Reads every message (``doctor --deep``)."""
        found: list[tuple[str | None, str, str]] = []
        for agent in self.agent_names():
            listed: list[tuple[str, State]] = []
            for state in STATES:
                try:
                    listed += self.entries(agent, [state])
                except UnsafePath:
                    continue  # a planted folder: problems() names it
            for message_id, _ in listed:
                try:
                    self.load(agent, message_id)
                except (Unreadable, UnsafePath) as exc:
                    found.append((agent, message_id, str(exc)))
                except NotFound:
                    continue  # moved meanwhile
        for live in (True, False):
            for message_id in self.broadcast_ids(live=live):
                try:
                    self.load_broadcast(message_id)
                except (Unreadable, UnsafePath) as exc:
                    found.append((None, message_id, str(exc)))
                except NotFound:
                    continue
        return found

    def quarantine(self, agent: str | None, message_id: str) -> str:
        """Move an unreadable message out of the way, into ``quarantine/`` (never
        deleted); return where it went."""
        if agent is None:
            source = os.path.join(self._folder("broadcast", "live"), f"{message_id}.md")
            if not os.path.lexists(source):
                source = os.path.join(self._folder("broadcast", "retracted"),
                                      f"{message_id}.md")
            target_folder = self._folder("quarantine", "broadcast", create=True)
        else:
            state = self.state_of(agent, message_id)
            if state is None:
                raise NotFound(f"no message {message_id} for {agent}")
            source = self._message_path(agent, state, message_id)
            target_folder = self._folder("quarantine", "agents", agent, create=True)
        target = os.path.join(target_folder, f"{message_id}.md")
        if os.path.lexists(target):
            raise IdTaken(f"{target} exists already; {source} was left where it is")
        os.rename(source, target)
        fsync_dir(target_folder)
        return target

    def fix_permissions(self) -> int:
        changed = 0
        for path, info in self._walk([]):
            needed = DIR_MODE if stat.S_ISDIR(info.st_mode) else FILE_MODE
            if stat.S_ISLNK(info.st_mode) or stat.S_IMODE(info.st_mode) == needed:
                continue
            if not stat.S_ISDIR(info.st_mode) and not stat.S_ISREG(info.st_mode):
                continue
            try:
                os.chmod(path, DIR_MODE if stat.S_ISDIR(info.st_mode) else FILE_MODE)
            except FileNotFoundError:
                continue  # removed meanwhile
            changed += 1
        return changed

    # Presence (running MCP servers; see mailslot.mail.presence) ----------------------
    # presence/<agent>/<key>.json, one small JSON object per running server, replaced
    # whole (tmp + rename) on every heartbeat so a reader never sees half a record.
    def write_presence(self, agent: str, key: str, record: Mapping[str, Any]) -> None:
        data = (jsontext.dumps(record, ascii=False) + "\n").encode("utf-8")
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
                    record = jsontext.loads(read_file(os.path.join(folder, agent, name)))
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
    def watch(self, kick: Callable[[], None], *, mail_for: str | None = None,
              waiters_of: str | None = None,
              wakes: bool | Callable[[str], bool] = False) -> Watching | None:
        from .watching import FolderWatch, observe

        if wakes:
            # The whole queue, claims included: a claim is then a move inside the watched
            # tree, which inotify reports as one event at once, rather than a move out of
            # it, which watchdog holds back for half a second to look for its other half.
            for kind in ("pending", "claimed", "locks"):
                self._folder("wake", kind, create=True)
            self._notify_folders()
            observer = observe([self._folder("wake", create=True)], kick, recursive=True,
                               creations_only=True)
            return None if observer is None else FolderWatch(observer, "the wake queue")
        paths = []
        if mail_for is not None:
            paths.append(self._box(mail_for, "unread", create=True))
        if waiters_of is not None:
            paths.append(self.waiters_folder(waiters_of))
        observer = observe(paths, kick)
        return None if observer is None else FolderWatch(observer, f"mail for {mail_for}")

    # The web page's live view ------------------------------------------------
    def watch_mail(self, kick: Callable[[], None]) -> Watching | None:
        from .watching import FolderWatch, observe

        paths = [self._folder("agents", create=True), self._folder("broadcast", create=True)]
        observer = observe(paths, kick, recursive=True)
        return None if observer is None else FolderWatch(observer, "every mailbox")


    # Notifier queues --------------------------------------------------------
    def _notify_folders(self) -> None:
        """Every notifier queue's folders, made before watching: a folder made under a
        recursive watch together with the one inside it is reported twice by watchdog."""
        from ...store.records import NOTIFY_QUEUES, notify_lane

        for lane in range(NOTIFY_QUEUES):
            for kind in ("pending", "claimed", "locks"):
                self._folder("wake", notify_lane(lane), kind, create=True)

    def notify_queue(self, lane: int) -> FileStore:
        from ...store.records import notify_lane

        view = FileStore(self.root)
        view._queue = ("wake", notify_lane(lane))  # inside wake/: watch(wakes=True) sees it
        return view

    def queued_agents(self) -> dict[str, list[str]]:
        from ...store.records import NOTIFY_QUEUES

        views = [self, *(self.notify_queue(lane) for lane in range(NOTIFY_QUEUES))]
        found = {view._queue[-1]: view.wake_agents() for view in views}
        return {queue: agents for queue, agents in found.items() if agents}

    # The session log -----------------------------------------------------------
    def log_session(self, record: Mapping[str, Any]) -> None:
        """One line in ``log/sessions.jsonl`` (0600), synced: it is the owner's record."""
        line = jsontext.dumps(record, ascii=False, compact=True) + "\n"
        folder = self._folder("log", create=True)
        append(os.path.join(folder, SESSIONS), line.encode("utf-8"), sync=True)

    def launch_lock(self) -> FileLock:
        """``log/sessions.lock``, ``flock``ed."""
        return FileLock(os.path.join(self._folder("log", create=True), "sessions.lock"),
                        "the session log")

    def started_sessions(self) -> list[dict[str, Any]]:
        path = os.path.join(self._folder("log"), SESSIONS)
        try:
            data = read_file(path)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise store_error(exc, "cannot read the session log") from None
        records = []
        for line in data.decode("utf-8", "replace").splitlines():
            try:
                record = jsontext.loads(line)
            except ValueError:
                continue  # a line cut by a crash
            if isinstance(record, dict):
                records.append(record)
        return records

    # Creating and upgrading a store --------------------------------------------
    def init(self) -> str:
        """Create the mailbox folder (0700); files need no upgrade. A folder already
        holding other files gets ``agents/``, so that it is seen as a mailbox."""
        existed = self.exists()
        self._folder(create=True)
        if not existed and os.listdir(self.root):
            self._folder("agents", create=True)
        return f"{self.root} {'was already' if existed else 'is now'} a mailbox (files)"


    # Search (the index is derived from the files; see store/search_index.py) --
    def _search_index(self) -> SearchIndex:
        if self._index is None:
            from .search_index import SearchIndex  # on first use: the hook path never needs it

            self._index = SearchIndex(self, self.agent_names, self._month_archives())
        return self._index

    def search(self, request: Search) -> list[str]:
        return self._search_index().search(request)

    def reindex(self) -> int:
        return self._search_index().rebuild()

    def catch_up_index(self, seconds: float | None) -> int:
        return self._search_index().catch_up(seconds)

    def unsearched(self) -> int:
        return self._search_index().unsearched()

    # Month archives of done mail (see store/files/archive_files.py) ---------------
    def _month_archives(self) -> MonthArchives:
        if self._archives is None:
            from .archive_files import MonthArchives  # on first use, like the index

            self._archives = MonthArchives(self)
        return self._archives

    def archive_done(self, before: str, *, dry_run: bool = False) -> dict[str, int]:
        return self._month_archives().archive_done(before, dry_run=dry_run)

    def restore_archived(self, months: list[str] | None = None) -> dict[str, int]:
        return self._month_archives().restore_archived(months)

    def archive_months(self) -> dict[str, int]:
        return self._month_archives().archive_months()

    def archived(self, message_id: str) -> list[tuple[str, Message]]:
        return self._month_archives().archived(message_id)

    def archived_ids(self, agent: str | None = None) -> list[str]:
        return self._month_archives().archived_ids(agent)




NEWEST = 200
"""How many files of each folder the default ``doctor`` looks at (the newest)."""
HISTORY = (("agents", "*", "done"), ("archive",), ("quarantine",), ("log", "once"))
"""Folders whose files only accumulate (``*``: any one name): listed by
``doctor --deep`` only."""


OPEN_FOLDERS = tuple(FOLDER_OF[s] for s in OPEN)


def _lstat_each(folder: str, names: list[str]) -> Iterator[tuple[str, os.stat_result]]:
    prefix = folder if folder.endswith(os.sep) else folder + os.sep  # os.path.join's
    for name in names:
        path = prefix + name
        try:
            yield path, os.lstat(path)
        except FileNotFoundError:
            continue  # removed meanwhile (a staging file, a moved message)


def _keeps_history(parts: list[str]) -> bool:
    return any(len(parts) == len(h) and all(w in ("*", p) for w, p in zip(h, parts, strict=True))
               for h in HISTORY)


def _sync_rename(source: str, target: str) -> None:
    """Make a rename between two folders survive a power cut, as a send's links do: the
    folder it went into first (so the message is never lost), then the one it left (so
    it is not back in its old state after a restart)."""
    fsync_dir(os.path.dirname(target))
    fsync_dir(os.path.dirname(source))


def _try_remove(path: str) -> None:
    """Remove ``path`` if possible: cleaning up after a failure must not hide it."""
    try:
        remove(path)
    except OSError:
        return
