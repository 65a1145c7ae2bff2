"""The embedded store: a Maildir-style folder of Markdown files.

Layout (see docs/format.md)::

    config.json
    agents/<name>/{new,cur,done}/<id>.md
    broadcast/{live,retracted}/<id>.md
    tmp/
    log/events.jsonl
    ... and one folder or file per namespace of keyed records (:mod:`.spaces`)

Crash safety comes from three habits: a file is written whole in ``tmp/`` and synced
before it is linked into place (readers never see half a file); a state change is one
rename (a crash leaves the old state, so mail is shown again, never lost); a message file
is never rewritten. Nothing inside the root follows a symlink.
"""

from __future__ import annotations

import os
import time

from ...core import jsontext
from ...core.durable import fsync_dir, not_followed, remove
from ...core.errors import IdTaken, MailslotError, NotFound, StoreError, UnsafePath
from ...core.ids import sender_of
from ...core.message import STATES, to_bytes
from ...store.base import Store
from . import unindexed
from .fs import read_file, store_error, translated
from .record_files import SPACES, RecordFiles
from .tally_files import TallyFiles

TYPE_CHECKING = False  # on the hook path: no typing, pathlib or dataclasses at load time
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from ...core.message import Message, State
    from ...core.query import Search
    from ...store.records import StoredFile, Watching
    from .archive_files import MonthArchives
    from .search_index import SearchIndex


@translated
class FileStore(RecordFiles, TallyFiles, Store):
    """The file store rooted at ``root`` (created on first write, 0700).

    The primitives of :mod:`mailslot.store.primitives` on a folder, every other method
    of :class:`~mailslot.store.base.Store` inherited from its roles, except where files
    answer faster. Built from parts side by side, each a direct subclass of the shared
    base in its own module: the layout, the one reader of message files and the logs
    (:class:`~.layout.MailboxFiles`, the base of every part), the keyed records
    (:class:`~.record_files.RecordFiles`: where each namespace lives) and the counts
    kept as mail moves (:class:`~.tally_files.TallyFiles`); this class adds writing and
    moving mail and broadcasts, watching, and what ``doctor``, search and the month
    archives of done mail need (:mod:`~.upkeep_files`, :mod:`~.search_index`,
    :mod:`~.archive_files`, each loaded on first use). Every rule about
    touching a file is in :mod:`~.fs`. The session hooks use this same class: the whole
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

    def agent_names(self) -> list[str]:
        folder = self._folder("agents")
        try:
            with os.scandir(folder) as it:
                return sorted(e.name for e in it if e.is_dir(follow_symlinks=False))
        except FileNotFoundError:
            return []

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

    def hook_sessions(self) -> list[dict[str, Any]]:
        """In one pass over ``hook-sessions/`` (each file's time, then its facts), not
        the two listings of the default: ``who`` and every start ask."""
        found: list[dict[str, Any]] = []
        for (agent, session), path in SPACES["hook-sessions"].walk(self, ()):
            try:
                seen = os.lstat(path).st_mtime
                facts = jsontext.loads(read_file(path))
            except (OSError, ValueError, UnsafePath):
                continue  # vanished, or not ours
            if isinstance(facts, dict):
                found.append({**facts, "agent": agent, "session": session, "seen": seen})
        return found

    # What doctor looks at (see upkeep_files.py, loaded by doctor only) -----------------
    def staging(self) -> list[StoredFile]:
        from .upkeep_files import staging

        return staging(self)

    def remove_staging(self, item: StoredFile) -> None:
        from .upkeep_files import remove_staging

        remove_staging(self, item)

    def problems(self, *, deep: bool = False) -> list[str]:
        from .upkeep_files import problems

        return problems(self, deep=deep)

    def fix_permissions(self) -> int:
        from .upkeep_files import fix_permissions

        return fix_permissions(self)

    # Watching ------------------------------------------------------------------------
    def watch(self, kick: Callable[[], None], *, mail_for: str | None = None,
              waiters_of: str | None = None,
              wakes: bool | Callable[[str], bool] = False) -> Watching | None:
        from .watching import FolderWatch, observe

        if wakes:
            # The whole queue, claims included: a claim is then a move inside the watched
            # tree, which inotify reports as one event at once, rather than a move out of
            # it, which watchdog holds back for half a second to look for its other half.
            from .wake_files import make_folders

            make_folders(self)
            observer = observe([self._folder("wake", create=True)], kick, recursive=True,
                               creations_only=True)
            return None if observer is None else FolderWatch(observer, "the wake queue")
        paths = []
        if mail_for is not None:
            paths.append(self._box(mail_for, "unread", create=True))
        if waiters_of is not None:
            paths.append(self._folder("waiters", waiters_of, create=True))
        observer = observe(paths, kick)
        return None if observer is None else FolderWatch(observer, f"mail for {mail_for}")

    # The web page's live view ------------------------------------------------
    def watch_mail(self, kick: Callable[[], None]) -> Watching | None:
        from .watching import FolderWatch, observe

        paths = [self._folder("agents", create=True), self._folder("broadcast", create=True)]
        observer = observe(paths, kick, recursive=True)
        return None if observer is None else FolderWatch(observer, "every mailbox")

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
