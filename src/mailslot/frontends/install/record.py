"""What ``mailslot install`` changed, kept so that ``install --undo`` takes back exactly that.

One small JSON file per host, scope and place (the project, or your home for ``--scope
user``), 0600 in a 0700 folder of your state folder: ``$XDG_STATE_HOME/mailslot/installs/``
(``~/.local/state/...``). Never in the project, so a cloned repository cannot plant one;
never in the mailbox, which may be a database, or another folder by the time of the undo.

It holds what each step of install wrote, as that step's undo needs it (:mod:`.steps`):
``files``, for each settings file install changed (:mod:`.file_step`): its real path,
whether install created it (and the folders it made for it), the digest of its text
before the first change (its copy, ``FILE.mailslot-backup``, must still match) and of the
text install last wrote, whether install alone has changed it since the first run, and
the entries it set (:mod:`.taking_back`); ``settings`` and ``mailbox``, the agent's
settings install set in the mailbox, each with the value it had before
(:mod:`.settings_step`); ``agent``, and the ``notes`` a run has shown. A run merges into
the record a run before it left, so the undo goes back to before the first.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...core.durable import replace_file
from ...core.errors import StoreError
from . import settings_files

FORMAT = "mailslot-install/1"
Record = dict[str, Any]


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
