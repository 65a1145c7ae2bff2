"""What ``mailslot install`` changed, kept so that ``install --undo`` takes back exactly that.

One small JSON file per host, scope and place (the project, or your home for ``--scope
user``), 0600 in a 0700 folder of your state folder: ``$XDG_STATE_HOME/mailslot/installs/``
(``~/.local/state/...``). Never in the project, so a cloned repository cannot plant one;
never in the mailbox, which may be a database, or another folder by the time of the undo.

It holds, for each settings file install changed: the file's real path, whether install
created it (and the folders it made for it), the digest of its text before the first
change (its copy, ``FILE.mailslot-backup``, must still match) and of the text install
last wrote, whether install alone has changed it since the first run, and the entries it
set (:mod:`mailslot.frontends.install.taking_back`); the mailbox and the agent's settings install
set there, each with the value it had before; the notes a run has shown. A run merges
into the record a run before it left, so the undo goes back to before the first.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ...core.durable import replace_file
from ...core.errors import StoreError
from ...core.values import Protocol
from . import settings_files, taking_back

FORMAT = "mailslot-install/1"
Record = dict[str, Any]


class Change(Protocol):
    """One settings file install is about to write (:class:`~.changes.Change`)."""

    @property
    def path(self) -> Path: ...
    @property
    def real(self) -> Path: ...
    @property
    def kind(self) -> str: ...
    @property
    def before(self) -> str | None: ...
    @property
    def after(self) -> str: ...
    @property
    def changed(self) -> bool: ...
    @property
    def shown(self) -> str: ...


def folder(env: Mapping[str, str] = os.environ) -> Path:
    """Where the records are: ``$XDG_STATE_HOME/mailslot/installs``."""
    state = env.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local",
                                                      "state")
    return Path(state) / "mailslot" / "installs"


def where(host: str, scope: str, place: Path, env: Mapping[str, str] = os.environ) -> Path:
    """The record of ``host``'s install in ``scope`` at ``place`` (the project, or home)."""
    key = "\0".join((host, scope, str(place.resolve())))
    name = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:24]
    return folder(env) / f"{host}-{name}.json"


def load(path: Path, host: str, scope: str, place: Path) -> Record:
    """The record at ``path`` (an empty one if there is none). A record is read as
    a copy install keeps is: never through a link, this user's, 0600."""
    text = settings_files.read_text(path, private=True)
    empty: Record = {"format": FORMAT, "host": host, "scope": scope,
                     "place": str(place.resolve()), "files": {}, "settings": {}, "notes": []}
    if text is None:
        return empty
    try:
        found = json.loads(text)
    except ValueError:
        found = None
    if not isinstance(found, dict) or found.get("format") != FORMAT \
            or not isinstance(found.get("files"), dict) \
            or not isinstance(found.get("settings"), dict):
        raise StoreError(f"{path} is not a record mailslot install wrote; remove it (the "
                         "undo then knows nothing of that install); nothing was changed")
    return {**empty, **found}


def save(path: Path, record: Record, *, unless_same: bool = False) -> None:
    """Write ``record`` whole (0600, in a 0700 folder); ``unless_same``: not when the
    file holds it already, nor when it would hold nothing (no record was needed)."""
    text = json.dumps(record, indent=1, ensure_ascii=False) + "\n"
    if unless_same and (settings_files.read_text(path, private=True) == text
                        or (not undoable(record) and not record["notes"])):
        return
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        replace_file(str(path), text)
    except OSError as exc:
        raise StoreError(f"cannot write install's record {path}: {exc.strerror or exc}; "
                         "nothing was changed") from None


def drop(path: Path) -> None:
    """Remove the record once its install is undone."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StoreError(f"cannot remove install's record {path}: {exc.strerror or exc}") \
            from None


def undoable(record: Record) -> bool:
    """Whether the record holds anything an undo would take back."""
    return bool(record["files"]) or bool(record["settings"].get("keys")) \
        or "bridge" in record["settings"]


def file_changed(record: Record, path: Path, real: Path, kind: str, before: str | None,
                 after: str, folders: list[Path]) -> bool:
    """Record that install writes ``after`` over ``before`` at ``real`` (``path`` as the
    host names it; ``folders`` made for it); whether this is the file's first change
    since the record began (then its copy is kept)."""
    ops, objects = taking_back.set_entries(settings_files.plain_doc(kind, before),
                                           settings_files.plain_doc(kind, after)) \
        if kind != "text" else ([], [])
    entry = record["files"].get(str(real))
    if entry is None:
        record["files"][str(real)] = {
            "path": str(path), "kind": kind, "created": before is None,
            "folders": [str(f) for f in folders],
            "original": settings_files.digest(before), "written": settings_files.digest(after),
            "exact": True, "entries": ops, "objects": objects}
        return True
    entry["exact"] = (entry["exact"] and settings_files.digest(before) == entry["written"]) \
        or (entry["created"] and before is None)  # made again: install's own once more
    entry["written"] = settings_files.digest(after)
    entry["entries"] = taking_back.merged(entry["entries"], ops)
    entry["objects"] += [o for o in objects if o not in entry["objects"]]
    entry["folders"] += [str(f) for f in folders if str(f) not in entry["folders"]]
    return False


def settings_changed(record: Record, before: Mapping[str, Any] | None,
                     after: Mapping[str, Any] | None, bridge: tuple[bool, bool]) -> bool:
    """Record the agent's settings in the mailbox as they were ``before`` and ``after``
    one run (``None``: no entry), and whether its ask for the host's bridge was on;
    whether the run changed any."""
    settings = record["settings"]
    settings.setdefault("existed", before is not None)
    keys = taking_back.flat_changes(before or {}, after or {}, leave=("bridge",))
    settings["keys"] = taking_back.merged(settings.get("keys", []), keys)
    first = settings.pop("bridge", None)
    start = first[0] if first is not None and first[1] == bridge[0] else bridge[0]
    if start != bridge[1]:
        settings["bridge"] = [start, bridge[1]]
    return bool(keys) or bridge[0] != bridge[1]


def write_changes(host: str, scope: str, place: Path, agent: str,
                  changes: Sequence[Change], notes: list[str]) -> Record:
    """Record the changes, keep a copy of each file changed for the first time (and
    say so in ``notes``), then write every file; the record. Every copy's place is
    checked before anything is written."""
    path = where(host, scope, place)
    log = load(path, host, scope, place)
    log["agent"] = agent
    changed = [c for c in changes if c.changed]
    firsts = [c for c in changed if c.before is not None and str(c.real) not in log["files"]]
    for change in firsts:
        settings_files.read_text(settings_files.backup_of(change.real), private=True)
    for change in changed:
        file_changed(log, change.path, change.real, change.kind, change.before,
                            change.after, settings_files.missing_folders(change.real.parent))
    for change in firsts:  # every copy kept before any file is changed
        assert change.before is not None
        kept = settings_files.keep_backup(change.real, change.before)
        notes.append(f"kept the previous {change.shown} as {kept}: `mailslot install "
                     f"--undo {host}` puts it back")
    if changed:
        save(path, log)
    for change in changed:
        settings_files.write_atomic(change.real, change.after, change.before)
    return log
