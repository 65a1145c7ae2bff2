"""What ``mailslot doctor`` looks at in a mailbox folder (the file store's overrides of
the ``Upkeep`` role): the staging area, planted links, odd files, owners and modes, an
events log that cannot be written and counts that disagree with their folders, from
``lstat`` alone; bounded by what is open, not by history, unless ``deep``. Loaded by
``doctor`` only (the file store's methods import it when called).
"""

from __future__ import annotations

import os
import stat
import time

from ...core.durable import FILE_MODE, open_file, remove, unsafe_owner
from ...core.errors import MailslotError, UnsafePath
from ...core.names import is_valid_name
from ...store.format import FOLDER_OF
from . import kept_listing
from .fs import APPEND, DIR_MODE, file_names, store_error
from .layout import OPEN

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

    from ...core.message import State
    from ...store.records import StoredFile
    from .tally_files import TallyFiles


def staging(store: TallyFiles) -> list[StoredFile]:
    """Regular files in ``tmp/`` only: anything else there is not mailslot's."""
    from ...store.records import StoredFile

    folder = store._folder("tmp")
    now = time.time()
    found: list[StoredFile] = []
    for name in file_names(folder):
        path = os.path.join(folder, name)
        try:
            found.append(StoredFile(path, now - os.lstat(path).st_mtime))
        except FileNotFoundError:
            continue  # its writer finished with it meanwhile
    return found


def remove_staging(store: TallyFiles, item: StoredFile) -> None:
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


def _walk(store: TallyFiles, found: list[str], *, deep: bool = True
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
        info = os.stat(store.root)
    except FileNotFoundError:
        return
    yield store.root, info

    def unlisted(exc: OSError) -> None:
        found.append(f"{exc.filename} cannot be read ({exc.strerror}); mailslot cannot "
                     "see what is in it (check its owner and mode)")

    open_mail: list[tuple[str, State]] = []  # (agent, state): from kept listings
    for top, dirs, files in os.walk(store.root, onerror=unlisted):
        names = dirs + files
        if not deep:  # each folder itself is looked at; history is not gone into
            inside = top[len(store.root) + 1:].split(os.sep) if top != store.root else []
            dirs[:] = [d for d in dirs if not _keeps_history([*inside, d])]
            if len(inside) == 2 and inside[0] == "agents":
                open_mail += [(inside[1], s) for s in OPEN if FOLDER_OF[s] in dirs]
                dirs[:] = [d for d in dirs if d not in OPEN_FOLDERS]
            if len(files) > NEWEST:
                names = names[:len(names) - len(files)] + sorted(files)[-NEWEST:]
        yield from _lstat_each(top, names)
    for agent, state in open_mail:
        try:
            folder = store._box(agent, state)
            newest = _newest_open(store, agent, state, folder)
        except FileNotFoundError:
            continue  # removed meanwhile
        except OSError as exc:
            unlisted(exc)
            continue
        except MailslotError:
            continue  # a planted link: the walk above named it
        yield from _lstat_each(folder, newest)


def _newest_open(store: TallyFiles, agent: str, state: State, folder: str) -> list[str]:
    """The newest :data:`NEWEST` names in an open mail folder: from its kept listing
    when the folder did not change since (one is kept only of a folder holding
    message files alone; an agent that never marks mail done keeps thousands in
    ``cur/``), else from listing it whole, strays and all."""
    if is_valid_name(agent):
        ids = store._open_listing(agent, state)[1]  # kept, or listed and kept if it can be
        stamp = kept_listing.stamp_of(folder)
        if stamp is not None and \
                kept_listing.read_kept(store._kept_path(agent, state), stamp, 0) is not None:
            return [f"{i}.md" for i in ids[-NEWEST:]]  # a kept folder holds ids alone
    return sorted(os.listdir(folder))[-NEWEST:]


def problems(store: TallyFiles, *, deep: bool = False) -> list[str]:
    """Links, odd files, owners and modes, tallies that disagree with their folder,
    and an events log that cannot be written: from ``lstat`` alone, without reading
    a message; the history folders' files only with ``deep`` (see :meth:`_walk`)."""
    found: list[str] = []
    staged = os.path.join(store.root, "tmp", "")  # a file right in it: no further sep
    me = os.geteuid()
    for path, info in _walk(store, found, deep=deep):
        if path == store.root:
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
    found.extend(_events_problems(store))
    found.extend(store.tally_problems(store.agent_names(), deep=deep))
    return found


def _events_problems(store: TallyFiles) -> list[str]:
    """Can a receipt be added to the events log? (Sends succeed without it.)"""
    path = os.path.join(store.root, "log", "events.jsonl")
    if not os.path.lexists(path):
        return []
    try:
        os.close(open_file(path, APPEND))
    except (OSError, UnsafePath) as exc:
        cause = exc.strerror if isinstance(exc, OSError) else str(exc)
        return [f"{path} cannot be written ({cause}); receipts and status are lost "
                "until it is fixed"]
    return []


def fix_permissions(store: TallyFiles) -> int:
    changed = 0
    for path, info in _walk(store, []):
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
