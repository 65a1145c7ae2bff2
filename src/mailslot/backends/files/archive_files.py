"""Retention: done mail older than a cutoff moved into one zip per month,
``archive/YYYY-MM.zip``, still searchable, and moved back on request.

A month's zip holds ``<agent>/<id>.md`` members, each the message file's bytes exactly
(deflated), so a person can open it with any unzip tool. The month is the message's own
(its id starts with its time). Only ``done/`` is ever archived: unread and read mail
stays where the hooks and the inbox look.

Order, so that a process killed anywhere loses nothing and leaves nothing a restore
would trip on: the new zip (the month's old members and the new ones) is written to a
temporary file in ``archive/``, synced, renamed over the old, the folder synced; only
then is each done file whose member is in the zip, byte for byte, removed. A rerun finds
the members already there and finishes the removals. A restore links each member back
into ``done/`` (a message already in any of its mailbox's folders is left alone), syncs,
and only then removes the zip: a rerun links what is missing and removes it. A restore
is all or nothing: every member of every month asked for is read and checked before the
first is put back, so a refused member puts nothing back.

Both hold ``archive/.lock`` (``flock``, not waited for: a second archiver is told one
is running). Nothing follows a link: a zip is opened ``O_NOFOLLOW``, odd names in
``archive/`` are ignored, and a restore accepts only members named by a valid agent
name and id whose file parses as that message. Every read of a zip is bounded
(:mod:`.bounded_zip`): its directory, each member's size (at most the largest message
file the mailbox's send limit allows, :meth:`MonthArchives.limit`) and its packing
ratio, so a zip bomb is refused before it is decompressed, by archiving, search, ``read``
and restore alike. A done file past that size is never archived (it stays in ``done/``).
``archive/`` also holds mailboxes set aside whole by ``mailslot agent remove``
(``<name>-<time>/`` folders): a name holds no ``.``, so the two never meet.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import zipfile

from ...core.config import Config
from ...core.durable import CREATE, fsync_dir, open_file, remove
from ...core.errors import MailslotError, NotFound, StoreError, Unreadable
from ...core.ids import is_id
from ...core.message import from_bytes, max_file_bytes
from ...core.names import is_valid_name
from ...core.text import DEFAULT_MAX_BODY_BYTES
from .bounded_zip import MAX_MEMBERS, ZipRefused, compression_for, open_zip, read_member
from .fs import LOCK, READ, read_file, store_error
from .record_files import read_config

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

    from ...core.message import Message
    from .tally_files import TallyFiles

ARCHIVE_FOLDER = "archive"
MONTH = re.compile(r"\d{4}-(0[1-9]|1[0-2])")
"""A month as archives are named (``2026-09``)."""
_LOCK_FILE = ".lock"


def month_of(message_id: str) -> str:
    """The month an id was made in (ids start with ``YYYY-MM-DD_``)."""
    return message_id[:7]


def _member(agent: str, message_id: str) -> str:
    return f"{agent}/{message_id}.md"


def _parts(name: str) -> tuple[str, str] | None:
    """``(agent, id)`` of a member named ``<agent>/<id>.md`` by a valid name and id;
    ``None`` for any other name (``../x``, an absolute path, a folder, a link)."""
    agent, slash, file = name.partition("/")
    if not slash or not file.endswith(".md") or not is_valid_name(agent):
        return None
    message_id = file[:-3]
    return (agent, message_id) if is_id(message_id) and "/" not in message_id else None


class MonthArchives:
    """The month archives of one file store (the ``Archives`` role), loaded by the store
    on first use: no send or hook imports :mod:`zipfile`."""

    def __init__(self, store: TallyFiles) -> None:
        self.store = store
        self._limit: int | None = None

    def limit(self) -> int:
        """The largest member read: the largest message file the send limit allows
        (``max_body_bytes``, never below its default, so mail sent before the owner
        lowered it stays restorable)."""
        if self._limit is None:
            body = Config(read_config(self.store) or {}).max_body_bytes
            self._limit = max_file_bytes(max(body, DEFAULT_MAX_BODY_BYTES))
        return self._limit

    def _archive_folder(self, *, create: bool = False) -> str:
        return self.store._folder(ARCHIVE_FOLDER, create=create)

    def archive_months(self) -> dict[str, int]:
        """Each month archived and how many message files its zip holds."""
        return {month: len(self._members(month)) for month in self._months()}

    def _months(self) -> list[str]:
        try:
            names = os.listdir(self._archive_folder())
        except FileNotFoundError:
            return []
        return sorted(n[:-4] for n in names
                      if n.endswith(".zip") and MONTH.fullmatch(n[:-4]))

    @contextlib.contextmanager
    def _open_zip(self, month: str) -> Iterator[zipfile.ZipFile | None]:
        """The month's zip, opened without following a link; ``None`` if there is none."""
        path = os.path.join(self._archive_folder(), f"{month}.zip")
        try:
            fd = open_file(path, READ)
        except FileNotFoundError:
            yield None
            return
        except OSError as exc:
            raise store_error(exc, f"cannot open {path}") from None
        with os.fdopen(fd, "rb") as raw, open_zip(raw, path) as archive:
            yield archive

    def _members(self, month: str) -> dict[str, tuple[str, str]]:
        """The month's members by name, as ``(agent, id)``, valid names only."""
        with self._open_zip(month) as archive:
            if archive is None:
                return {}
            return {info.filename: parts for info in archive.infolist()
                    if (parts := _parts(info.filename)) is not None}

    def archived(self, message_id: str) -> list[tuple[str, Message]]:
        """Every archived copy of ``message_id``: ``(agent, message)``, agents sorted."""
        if not is_id(message_id):
            return []
        month = month_of(message_id)
        if not MONTH.fullmatch(month):
            return []
        found: list[tuple[str, Message]] = []
        with self._open_zip(month) as archive:
            if archive is None:
                return []
            for info in archive.infolist():
                parts = _parts(info.filename)
                if parts is not None and parts[1] == message_id:
                    found.append((parts[0], self._checked(archive, info, message_id)[1]))
        return sorted(found, key=lambda f: f[0])

    def archived_ids(self, agent: str | None = None) -> list[str]:
        """Every archived message's id (``agent``: of its copies), each once, oldest first."""
        return sorted({i for m in self._months() for a, i in self._members(m).values()
                       if agent is None or a == agent})

    # Archiving -------------------------------------------------------------------
    def archive_done(self, before: str, *, dry_run: bool = False) -> dict[str, int]:
        """Move every done message whose id is older than ``before`` (an id-shaped time
        prefix, ``YYYY-MM-DD_HHMMSS``) into its month's zip; per month, how many
        message files were (with ``dry_run``: would be) moved."""
        chosen: dict[str, list[tuple[str, str]]] = {}
        with self._archive_lock():
            self._remove_leftovers()
            for agent in self._mailboxes():
                for message_id in self.entries_in_done(agent):
                    if message_id < before and self._fits(agent, message_id):
                        chosen.setdefault(month_of(message_id), []).append(
                            (agent, message_id))
            if not dry_run:
                for month, files in sorted(chosen.items()):
                    try:
                        self._archive_month(month, sorted(files))
                    except ZipRefused as exc:
                        raise ZipRefused(f"{exc}; {month}'s done mail was left where it "
                                         f"is (move archive/{month}.zip aside to go on)"
                                         ) from None
        return {month: len(files) for month, files in sorted(chosen.items())}

    def _fits(self, agent: str, message_id: str) -> bool:
        """Is the done file within :meth:`limit`? One past it (imported, or sent under
        a higher limit) stays in ``done/``: it is never put where a restore refuses it."""
        try:
            size = os.lstat(self.store._message_path(agent, "done", message_id)).st_size
        except OSError:
            return False  # moved meanwhile: nothing to archive
        return size <= self.limit()

    def _remove_leftovers(self) -> None:
        """Temporary zips of a run that was killed (the lock says none runs now)."""
        folder = self._archive_folder()
        for name in os.listdir(folder):
            if name.startswith(".") and name.endswith(".tmp"):
                remove(os.path.join(folder, name))

    def entries_in_done(self, agent: str) -> list[str]:
        return [i for i, _ in self.store.entries(agent, ("done",)) if MONTH.fullmatch(month_of(i))]

    def _mailboxes(self) -> list[str]:
        try:
            names = os.listdir(self.store._folder("agents"))
        except FileNotFoundError:
            return []
        return sorted(n for n in names if is_valid_name(n))

    def _archive_month(self, month: str, files: list[tuple[str, str]]) -> None:
        folder = self._archive_folder(create=True)
        path = os.path.join(folder, f"{month}.zip")
        held = self._members(month)
        new = [f for f in files if _member(*f) not in held]
        if len(held) + len(new) > MAX_MEMBERS:
            raise StoreError(f"archive/{month}.zip would hold {len(held) + len(new)} "
                             f"messages, past the {MAX_MEMBERS} a month archive may; "
                             f"{month}'s done mail was left where it is")
        if new:
            tmp = os.path.join(folder, f".{month}.zip.{os.urandom(6).hex()}.tmp")
            try:
                self._write_zip(tmp, month, new)
                os.replace(tmp, path)
            except OSError as exc:
                remove(tmp)
                raise store_error(exc, f"cannot write {path}; nothing was moved "
                                       "(its done mail is where it was)") from None
            except BaseException:
                remove(tmp)
                raise
            fsync_dir(folder)
        self._remove_archived(month, files)

    def _write_zip(self, tmp: str, month: str, new: list[tuple[str, str]]) -> None:
        """The month's zip as it will be: its members so far, then ``new``, synced."""
        fd = open_file(tmp, CREATE)
        with os.fdopen(fd, "wb") as out:
            with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
                with self._open_zip(month) as old:
                    if old is not None:
                        for info in old.infolist():
                            if _parts(info.filename) is not None:
                                target.writestr(info, read_member(
                                    old, info, self.limit(), f"archive/{month}.zip"))
                for agent, message_id in new:
                    with contextlib.suppress(FileNotFoundError):  # moved meanwhile: left
                        data = read_file(self.store._message_path(agent, "done", message_id))
                        target.writestr(_member(agent, message_id), data,
                                        compress_type=compression_for(data))
            out.flush()
            os.fsync(out.fileno())

    def _remove_archived(self, month: str, files: list[tuple[str, str]]) -> None:
        """Remove each done file whose member is in the synced zip, byte for byte."""
        touched: set[str] = set()
        counted: set[str] = set()
        with self._open_zip(month) as archive:
            names = {} if archive is None else {i.filename: i for i in archive.infolist()}
            for agent, message_id in files:
                name = _member(agent, message_id)
                if archive is None or name not in names:
                    continue
                path = self.store._message_path(agent, "done", message_id)
                try:
                    same = read_file(path) == read_member(
                        archive, names[name], self.limit(), f"archive/{month}.zip")
                except FileNotFoundError:
                    continue
                if same:
                    remove(path)
                    touched.add(os.path.dirname(path))
                    counted.add(agent)
        for folder in sorted(touched):
            fsync_dir(folder)
        self._recount(counted)

    # Restoring -------------------------------------------------------------------
    def restore_archived(self, months: list[str] | None = None) -> dict[str, int]:
        """Move the archived mail of ``months`` (``None``: every month) back into
        ``done/``; per month, how many message files were put back. All or nothing:
        every member of every month is checked before the first is put back."""
        with self._archive_lock():
            have = self._months()
            wanted = have if months is None else months
            for month in wanted:
                if month not in have:
                    raise NotFound(f"no archive for {month} (archived: "
                                   f"{', '.join(have) or 'none'})")
            for month in wanted:
                try:
                    self._restore_month(month, check_only=True)
                except StoreError as exc:
                    raise type(exc)(f"{exc}; nothing was restored") from None
            return {month: self._restore_month(month) for month in wanted}

    def _restore_month(self, month: str, *, check_only: bool = False) -> int:
        """Put the month's members back (with ``check_only``: only read and check
        each, putting nothing back)."""
        put = 0
        touched: set[str] = set()
        counted: set[str] = set()
        with self._open_zip(month) as archive:
            if archive is None:
                return 0
            for info, agent, message_id in self._restorable(archive, month):
                data = self._checked(archive, info, message_id)[0]
                if check_only or self.store.state_of(agent, message_id) is not None:
                    continue  # restored before (a run killed before the zip went)
                folder = self.store._box(agent, "done", create=True)
                staged = self.store._stage(data, message_id)
                try:
                    os.link(staged, os.path.join(folder, f"{message_id}.md"))
                except FileExistsError:
                    pass
                finally:
                    remove(staged)
                put += 1
                touched.add(folder)
                counted.add(agent)
        if check_only:
            return 0
        for folder in sorted(touched):
            fsync_dir(folder)
        self._recount(counted)
        remove(os.path.join(self._archive_folder(), f"{month}.zip"))
        fsync_dir(self._archive_folder())
        return put

    @staticmethod
    def _restorable(archive: zipfile.ZipFile, month: str
                    ) -> list[tuple[zipfile.ZipInfo, str, str]]:
        """Every member as ``(info, agent, id)``; a member that is not a message of an
        agent refuses the whole restore."""
        members = []
        for info in archive.infolist():
            parts = _parts(info.filename)
            if parts is None or info.is_dir():
                raise StoreError(f"archive/{month}.zip holds {info.filename!r}, which "
                                 "is not a message of an agent")
            members.append((info, *parts))
        return members

    def _checked(self, archive: zipfile.ZipFile, info: zipfile.ZipInfo, message_id: str
                 ) -> tuple[bytes, Message]:
        """A member's bytes and message, checked: read within bounds, its header naming
        the id its name gives."""
        data = read_member(archive, info, self.limit(), f"archive/{month_of(message_id)}.zip")
        try:
            message = from_bytes(data, name=info.filename)
        except MailslotError as exc:
            raise Unreadable(f"{info.filename} in an archive is not a message ({exc})"
                             ) from None
        if message.id != message_id:
            raise Unreadable(f"{info.filename} in an archive holds message {message.id}, "
                             "not the one its name says")
        return data, message

    def _recount(self, agents: set[str]) -> None:
        """The done counts of ``agents`` after their done folders changed here (not by a
        move between states, which keeps a count itself): so ``who`` and plain
        ``doctor`` need not find the count stale and list the folder."""
        for agent in sorted(agents):
            self.store.recount(agent)

    @contextlib.contextmanager
    def _archive_lock(self) -> Iterator[None]:
        path = os.path.join(self._archive_folder(create=True), _LOCK_FILE)
        try:
            fd = open_file(path, LOCK)
        except OSError as exc:
            raise store_error(exc, "cannot lock the archive") from None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise StoreError("another mailslot archive is running on this mailbox; "
                                     "try again when it ends (nothing was changed)") from None
                raise store_error(exc, "cannot lock the archive") from None
            yield
        finally:
            os.close(fd)

