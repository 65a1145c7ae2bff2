"""Per-agent counts kept as mail moves, so that no listing has to list ``done/``::

    tally/<agent>.json    {"done": [count, inode, mtime_ns], "senders": [names]}
    tally/<agent>.lock    flock'ed by whoever changes the tally or the done folder

Done mail is kept forever, so ``agents/<name>/done/`` grows without end; ``inbox``
(its "N done" line), ``who`` (who ever wrote to whom) and ``doctor`` read this small
file instead. A part of :class:`~mailslot.backends.files.file_store.FileStore`.

Why it can be trusted: the count is stamped with the done folder's inode and
modification time as they were right after the change it counts. Every mailslot move
into ``done/`` takes the lock, checks the stamp, renames, and writes the new count with
the new stamp; any other change of the folder (a crash between the rename and the
write, a file moved by hand, a restore) leaves the folder's time different from the
stamp, and readers count the folder until the next move writes the right count.
A change within one tick of the file system's clock after the previous one could
leave the folder's time as stamped, so a move that soon after the last is first
marked ``"moving"`` in the tally (a crash then leaves a count nobody trusts). The
tally is a cache of what the folders hold: it is replaced whole (tmp + rename) and
not synced; a torn or missing one is counted again. ``os`` and ``json`` only (the
hook path loads this module).

Open mail (``new/``, ``cur/``) changes at every delivery, so its count is kept the
other way round, by whoever lists it (:mod:`.kept_listing`).
"""

from __future__ import annotations

import os
import time

from ...core import jsontext
from ...core.durable import open_file
from ...core.errors import UnsafePath
from ...core.ids import is_id, recipient_of, sender_of
from ...core.message import STATES
from ...core.names import is_valid_name
from . import kept_listing
from .fs import READ, FileLock, append, ids_in, read_file
from .layout import OPEN, MailboxFiles

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    T = TypeVar("T")


class TallyFiles(MailboxFiles):
    """The done count and correspondents of each agent (see the module docstring)."""

    def _read_tally(self, agent: str) -> dict[str, Any]:
        """The tally as written, or ``{}`` when it is missing, torn or not ours."""
        try:
            record = jsontext.loads(read_file(self._tally_path(agent, ".json")))
        except (OSError, ValueError, UnsafePath):
            return {}
        return record if isinstance(record, dict) else {}

    def _write_tally(self, agent: str, record: dict[str, Any]) -> None:
        """Replace the tally whole (holding the lock); unsynced: it is a cache."""
        data = jsontext.dumps(record, compact=True).encode()
        tmp = self._stage(data, f"tally-{agent}", sync=False)
        os.rename(tmp, self._tally_path(agent, ".json", create=True))

    def _done_stamp(self, agent: str) -> list[int] | None:
        """The done folder's stamp as the tally holds it (a JSON list)."""
        stamp = kept_listing.stamp_of(self._box(agent, "done"))
        return None if stamp is None else list(stamp)

    def _trusted_done(self, record: dict[str, Any], stamp: list[int] | None) -> int | None:
        """The counted done mail, if ``stamp`` is the one the count was written with."""
        if stamp is None:
            return 0
        counted = record.get("done")
        if isinstance(counted, list) and len(counted) == 3 and counted[1:] == stamp \
                and isinstance(counted[0], int) and counted[0] >= 0:
            return counted[0]
        return None

    def with_tally(self, agent: str, change: Callable[[], tuple[T, int]]) -> T:
        """Run ``change`` under ``agent``'s tally lock; it returns its result and how
        many messages it moved into the done folder; then write the count it leaves
        (counted again if the stamp did not match before the change)."""
        with FileLock(self._tally_path(agent, ".lock", create=True), f"{agent}'s tally"):
            record = self._read_tally(agent)
            stamp = self._done_stamp(agent)
            before = self._trusted_done(record, stamp)
            if before is not None and stamp is not None and \
                    time.time_ns() - stamp[1] < kept_listing.SETTLED_NS:
                # The folder changed within a clock tick or so: this change might leave
                # its time as stamped. Marked as changing first, so a crash before the
                # count below is written leaves a count nobody trusts.
                self._write_tally(agent, {**record, "done": [before, *stamp, "moving"]})
            result, moved = change()
            stamp = self._done_stamp(agent)
            if stamp is None:
                return result
            if before is None:
                before, moved = len(ids_in(self._box(agent, "done"))), 0
            record["done"] = [before + moved, *stamp]
            if not isinstance(record.get("senders"), list):
                record["senders"] = sorted(self._senders_listed(agent))
            self._write_tally(agent, record)
            return result

    def count_done(self, agent: str) -> int:
        """How many done messages ``agent`` has, from its tally when the tally matches
        the folder (the usual case: nothing is listed), else counted once and kept."""
        record = self._read_tally(agent)
        known = self._trusted_done(record, self._done_stamp(agent))
        if known is not None:
            return known
        return len(ids_in(self._box(agent, "done")))  # a reader writes nothing

    def count_unread(self, agent: str, oldest: int = 0) -> tuple[int, list[str]]:
        """How many unread messages ``agent`` has and the ``oldest`` oldest of their
        ids, from the first lines of the folder's kept listing when it matches the
        folder (see :mod:`.kept_listing`)."""
        return self._open_listing(agent, "unread", oldest)

    def correspondents(self, agent: str) -> set[str]:
        """Who ever sent ``agent`` mail that it still holds: from the tally, or listed
        when there is none yet (a mailbox no mail reached since it was made)."""
        senders = self._read_tally(agent).get("senders")
        if isinstance(senders, list):
            return {s for s in senders if isinstance(s, str)}
        return self._senders_listed(agent)

    def note_sender(self, agent: str, sender: str) -> None:
        """Remember that ``sender`` wrote to ``agent`` (after a delivery): written only
        the first time, so a send usually just reads the small tally."""
        senders = self._read_tally(agent).get("senders")
        if isinstance(senders, list) and sender in senders:
            return
        with FileLock(self._tally_path(agent, ".lock", create=True), f"{agent}'s tally"):
            record = self._read_tally(agent)
            known = record.get("senders")
            if not isinstance(known, list):
                self._recount(agent)  # the first mail since the tally came: count it
                return  # (the message just delivered is counted with the rest)
            if sender not in known:
                record["senders"] = sorted({*known, sender})
                self._write_tally(agent, record)

    def recount(self, agent: str) -> bool:
        """Count ``agent``'s done folder and correspondents again (listing every
        folder) and write the tally; ``True`` if it was wrong or missing (``doctor
        --fix``, for every agent)."""
        with FileLock(self._tally_path(agent, ".lock", create=True), f"{agent}'s tally"):
            return self._recount(agent)

    def _recount(self, agent: str) -> bool:
        """:meth:`recount`, holding the lock."""
        old = self._read_tally(agent)
        stamp = self._done_stamp(agent)
        record: dict[str, Any] = {"senders": sorted(self._senders_listed(agent))}
        if stamp is not None:
            record["done"] = [len(ids_in(self._box(agent, "done"))), *stamp]
        if record == old:
            return False
        self._write_tally(agent, record)
        return True

    def repair_counts(self) -> int:
        """Every tally and every sender's index counted again from the folders; how many
        tallies were wrong (an index is rebuilt whole, silently: it holds no count)."""
        wrong = 0
        senders: set[str] = set()
        for agent in self.agent_names():
            try:
                wrong += self.recount(agent)
                senders |= self._senders_listed(agent)
            except UnsafePath:
                continue  # a planted folder: problems() names it
        for sender in sorted(s for s in senders if is_valid_name(s)):
            try:
                with FileLock(self._sent_path(sender, ".lock", create=True),
                              f"{sender}'s sent"):
                    self._rebuild_sent(sender)
            except UnsafePath:
                continue  # tmp/ or sent/ planted: problems() names it
        return wrong

    def _senders_listed(self, agent: str) -> set[str]:
        return {sender_of(i) for state in STATES for i in ids_in(self._box(agent, state))}

    def tally_problems(self, agents: list[str], *, deep: bool = False) -> list[str]:
        """Each tally that disagrees with its mailbox: by its stamp alone (nothing
        listed), or with ``deep`` by counting every folder; one line each."""
        found = []
        for agent in agents:
            record = self._read_tally(agent)
            try:
                stamp = self._done_stamp(agent)
                counted = self._trusted_done(record, stamp)
                if deep and record and counted is not None:
                    held = self._senders_listed(agent)
                    if counted != len(ids_in(self._box(agent, "done"))) or \
                            not held <= set(record.get("senders") or ()):
                        counted = None
                if deep and counted is not None and self._kept_listing_wrong(agent):
                    counted = None
            except UnsafePath:
                continue  # a planted folder: the walk names it
            if record and counted is None:
                found.append(f"{self._tally_path(agent, '.json')} does not match "
                             f"{agent}'s mailbox (it is slower to list until its next "
                             "done; `mailslot doctor --fix` counts it again)")
        return found

    def _kept_listing_wrong(self, agent: str) -> bool:
        """Does a kept listing of an open folder whose stamp still matches disagree
        with the folder (``doctor --deep``)?"""
        for state in OPEN:
            folder = self._box(agent, state)
            stamp = kept_listing.stamp_of(folder)
            kept = None if stamp is None else kept_listing.read_kept(
                self._kept_path(agent, state), stamp)
            if kept is not None and sorted(ids_in(folder)) != kept[1]:
                return True
        return False

    def forget_tally(self, agent: str) -> None:
        """Remove ``agent``'s tally and kept listings (its mailbox was archived): new
        ones are counted."""
        for path in [self._tally_path(agent, ".json"),
                     *(self._kept_path(agent, state) for state in OPEN)]:
            try:
                os.unlink(path)
            except FileNotFoundError:
                continue

    # What each agent sent --------------------------------------------------------------
    # sent/<sender>: "# complete" then one id a line, oldest first, appended at every
    # send under sent/<sender>.lock. Without its first line (a mailbox from before the
    # index) the sender's next send builds it from every mailbox, under the same lock,
    # so no send's line is lost meanwhile; until then a reader lists every mailbox.
    def note_sent(self, sender: str, message_id: str) -> None:
        """Add a just-delivered ``message_id`` to ``sender``'s index (not synced: the
        folders are the truth; ``doctor --fix`` builds a lost index again)."""
        path = self._sent_path(sender, "", create=True)
        with FileLock(self._sent_path(sender, ".lock"), f"{sender}'s sent"):
            if self._sent_tail(path, 0) is None:
                self._rebuild_sent(sender)  # it holds message_id already: it was listed
            else:
                append(path, f"{message_id}\n".encode(), sync=False)

    def _rebuild_sent(self, sender: str) -> None:
        """Write ``sender``'s whole index from every mailbox (holding its lock)."""
        every = sorted(self._sent_listed(sender))
        data = "".join(f"{i}\n" for i in [SENT_HEAD, *every]).encode()
        os.rename(self._stage(data, f"sent-{sender}", sync=False),
                  self._sent_path(sender, ""))

    def sent_ids(self, sender: str, limit: int | None = None) -> list[str]:
        ids = self._sent_tail(self._sent_path(sender, ""), limit)
        if ids is None:  # no index yet: listed (a reader writes nothing)
            ids = sorted(self._sent_listed(sender), reverse=True)
        held = [i for i in ids if self._still_held(i)]
        return held if limit is None else held[:limit]

    def _sent_path(self, sender: str, suffix: str, *, create: bool = False) -> str:
        if not is_valid_name(sender):
            raise UnsafePath(f"agent {sender!r} is not safe as a file name")
        return os.path.join(self._folder("sent", create=create), sender + suffix)

    def _sent_tail(self, path: str, limit: int | None) -> list[str] | None:
        """The newest ids of a complete index, read from its end (``None``: no
        complete index). A page reads a few kilobytes however long the index is."""
        try:
            fd = open_file(path, READ)
        except FileNotFoundError:
            return None
        try:
            if os.read(fd, len(SENT_HEAD) + 1) != f"{SENT_HEAD}\n".encode():
                return None
            size = os.fstat(fd).st_size
            want = None if limit is None else limit * 2 + 16  # lines of gone mail too
            chunk = size if want is None else want * 96
            while True:
                start = max(len(SENT_HEAD) + 1, size - chunk)
                data = os.pread(fd, size - start, start)
                lines = data.decode("utf-8", "replace").split("\n")
                if start > len(SENT_HEAD) + 1:
                    lines = lines[1:]  # the first may be cut
                ids = [i for i in reversed(lines) if i and is_id(i)]
                if want is None or len(ids) >= want or start <= len(SENT_HEAD) + 1:
                    return list(dict.fromkeys(ids))
                chunk *= 4
        finally:
            os.close(fd)

    def _still_held(self, message_id: str) -> bool:
        """Is the message still in a mailbox or a broadcast folder (not archived)?
        Asked of its recipients only, which the id names."""
        recipient = recipient_of(message_id)
        boxes = self.agent_names() if recipient is None else [recipient]
        if any(self.state_of(box, message_id) is not None for box in boxes):
            return True
        return any(os.path.lexists(os.path.join(self._folder("broadcast", f),
                                                f"{message_id}.md"))
                   for f in ("live", "retracted"))

    def _sent_listed(self, sender: str) -> set[str]:
        """Every held id ``sender`` sent, found by listing every folder (a rebuild)."""
        found = {i for box in self.agent_names() for state in STATES
                 for i in ids_in(self._box(box, state)) if sender_of(i) == sender}
        for folder in ("live", "retracted"):
            found.update(i for i in ids_in(self._folder("broadcast", folder))
                         if sender_of(i) == sender)
        return found

    if TYPE_CHECKING:
        def agent_names(self) -> list[str]: ...


SENT_HEAD = "# complete"
