"""The step that writes one settings file, and its undo.

Install reads the file (where its path really leads, :mod:`.places`), edits it in memory
(:mod:`.entries`) and, before writing, records in the file's entry of the record: its
real path, whether install created it (and the folders it made for it), the digest of
its text before the first change, kept whole beside it as ``FILE.mailslot-backup``
(0600), and of the text install last wrote, whether install alone has changed it since,
and the entries it set (:mod:`.taking_back`). A second run merges into that entry, so
the undo goes back to before the first.

The undo checks everything before writing anything: the file is where install wrote it
(no link now leads elsewhere), a regular file of yours, and its copy a 0600 file of
yours holding what the record says. Then:

- untouched since install: a file install created is removed (and the folders it made,
  when empty); another gets its old bytes back from its copy;
- changed since (you edited it): only the entries install set are taken out; a file
  install created that holds nothing else then is removed;

and the copy is removed with its file's undo.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from ...core.errors import UnsafePath
from . import settings_files, taking_back
from .record import Record
from .steps import Undo, Written


@dataclass(frozen=True)
class FileStep:
    """One settings file: what install read there (``before``; ``None``: no file yet)
    and what it writes (``after``)."""

    path: Path
    before: str | None
    after: str
    in_project: bool
    real: Path  # where the path leads (links followed): what is really written
    kind: str = "json"  # or "toml", or "text": a file of mailslot's own, written whole
    said: tuple[str, ...] = ()  # what to tell once it is written (or would be)

    @property
    def changed(self) -> bool:
        return self.before != self.after

    @property
    def shown(self) -> str:
        """The path, and the file it really is when a link leads elsewhere."""
        return str(self.path) if self.real == self.path else f"{self.path} -> {self.real}"

    @property
    def reads(self) -> str:
        return self.shown

    def diff(self) -> str:
        return settings_files.diff(self.path, self.before, self.after)

    def dry_run(self) -> list[str]:
        return list(self.said)

    def check(self, log: Record) -> None:
        """A first change keeps a copy: whatever holds the copy's name already must be a
        copy mailslot kept (a planted link, FIFO or file is refused here)."""
        if self._first(log):
            settings_files.read_text(settings_files.backup_of(self.real), private=True)

    def keep(self, log: Record) -> list[str]:
        """Its entry in the record, and the copy of the file's text before its first
        change."""
        if not self.changed:
            return []
        first = self._first(log)
        _record(log, self, settings_files.missing_folders(self.real.parent))
        if not first:
            return []
        assert self.before is not None
        kept = settings_files.keep_backup(self.real, self.before)
        return [f"kept the previous {self.shown} as {kept}: `mailslot install --undo "
                f"{log['host']}` puts it back"]

    def write(self, log: Record) -> Written:
        if self.changed:
            settings_files.write_atomic(self.real, self.after, self.before)
        return Written(list(self.said), self.changed)

    def _first(self, log: Record) -> bool:
        """Whether this changes a file that was there before, for the first time since
        the record began (then its copy is kept)."""
        return self.changed and self.before is not None and str(self.real) not in log["files"]


def _record(log: Record, step: FileStep, folders: list[Path]) -> None:
    """Record that install writes ``step.after`` over ``step.before`` (``folders`` made
    for it), merged into what a run before it recorded of the file."""
    ops, objects = taking_back.set_entries(settings_files.plain_doc(step.kind, step.before),
                                           settings_files.plain_doc(step.kind, step.after)) \
        if step.kind != "text" else ([], [])
    entry = log["files"].get(str(step.real))
    if entry is None:
        log["files"][str(step.real)] = {
            "path": str(step.path), "kind": step.kind, "created": step.before is None,
            "folders": [str(f) for f in folders],
            "original": settings_files.digest(step.before),
            "written": settings_files.digest(step.after),
            "exact": True, "entries": ops, "objects": objects}
        return
    entry["exact"] = (entry["exact"] and settings_files.digest(step.before) == entry["written"]) \
        or (entry["created"] and step.before is None)  # made again: install's own once more
    entry["written"] = settings_files.digest(step.after)
    entry["entries"] = taking_back.merged(entry["entries"], ops)
    entry["objects"] += [o for o in objects if o not in entry["objects"]]
    entry["folders"] += [str(f) for f in folders if str(f) not in entry["folders"]]


def recorded(log: Record) -> list[Undo]:
    """The undo of each file in ``log``, in the order install first wrote them; each
    checked now (one refusal, and nothing is written)."""
    return [_taking_back(Path(real), entry) for real, entry in log["files"].items()]


def _taking_back(real: Path, entry: dict[str, Any]) -> Undo:
    """Check one file and its copy; what to do to it (nothing written yet)."""
    path = Path(entry["path"])
    try:
        now_real = path.resolve()
    except (OSError, RuntimeError):
        now_real = None
    if now_real != real:
        raise UnsafePath(f"{path} now leads to {now_real or 'a link loop'}, not to {real} "
                         "where install wrote it: nothing was changed")
    now = settings_files.read_text(real)
    copy = settings_files.read_backup(real, entry["original"]) if entry["original"] else None
    untouched = entry["exact"] and settings_files.digest(now) == entry["written"]
    if untouched and entry["created"]:
        return partial(_remove, path, real, now, entry["folders"], "install created it")
    if untouched and copy is not None:
        return partial(_write, path, real, now, copy, copy,
                       f"restored {path} as it was before install")
    return _edited(path, real, entry, now, copy, untouched)


def _edited(path: Path, real: Path, entry: dict[str, Any], now: str | None,
            copy: str | None, untouched: bool) -> Undo:
    """A file changed since install (or left without its copy): what undo can still do."""
    if now is None:
        kept = f" (its copy from before install stays: {settings_files.backup_of(real)})"
        return lambda: [f"{path} is gone: left as it is" + (kept if copy is not None else "")]
    if settings_files.digest(now) == entry["original"]:
        return lambda: [f"{path} is as it was before install", *_drop_copy(real, copy)]
    if entry["kind"] == "text":
        return lambda: [f"{path} was changed since install: left as it is (remove it "
                        "yourself if you want it gone)"]
    doc = settings_files.editable_doc(entry["kind"], path, now)
    taking_back.take_out(doc, entry["entries"], entry["objects"])
    why = f"has no copy left ({settings_files.backup_of(real)})" if untouched \
        else "was changed since install"
    if entry["created"] and not doc:
        return partial(_remove, path, real, now, entry["folders"],
                       f"it {why}, and held nothing but mailslot's entries")
    text = settings_files.dumped_doc(entry["kind"], path, doc, now)
    return partial(_write, path, real, now, text, copy,
                   f"{path} {why}: took out only mailslot's entries, the rest stays")


def _remove(path: Path, real: Path, now: str | None, folders: list[str], why: str
            ) -> list[str]:
    settings_files.remove_file(real, now)
    settings_files.remove_folders(folders)
    return [f"removed {path} ({why})"]


def _write(path: Path, real: Path, now: str | None, text: str, copy: str | None,
           said: str) -> list[str]:
    settings_files.write_atomic(real, text, now)
    return [said, *_drop_copy(real, copy)]


def _drop_copy(real: Path, copy: str | None) -> list[str]:
    if copy is None:
        return []
    settings_files.remove_file(settings_files.backup_of(real), copy, private=True)
    return [f"removed the copy {settings_files.backup_of(real)}"]
