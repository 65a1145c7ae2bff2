"""``mailslot install --undo HOST``: take back what ``install`` did, from its record.

Everything is checked before anything is written: each file is where install wrote it
(no link now leads elsewhere), a regular file of yours, and its copy (``FILE.mailslot-
backup``) a 0600 file of yours holding what the record says; one refusal and nothing
changes. Then the agent's settings in the mailbox are put back, then each file:

- untouched since install: a file install created is removed (and the folders it made,
  when empty); another gets its old bytes back from its copy;
- changed since (you edited it): only the entries install set are taken out
  (:mod:`mailslot.frontends.install.taking_back`); a file install created that holds nothing else
  then is removed;

and each copy is removed with its file's undo. Last, the record goes: a second undo has
nothing to do, and says so.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ... import host_registry as hosts
from ...core.errors import UnsafePath
from ...service.mailbox import Mailbox
from . import record, settings_files, taking_back
from .changes import bridge_ask, settings_of
from .places import place_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ...host_registry import Host
    from ...host_registry.host import Scope

Step = Callable[[], list[str]]


def undo(host_name: str, *, scope: Scope | None = None, home: Path | None = None,
         cwd: Path | None = None) -> list[str]:
    """Take back the install of ``host_name`` in ``scope`` here; one line per thing."""
    host = hosts.host(host_name)
    scope = scope or host.default_scope
    place = place_of(scope, home, cwd)
    where = record.where(host.name, scope, place)
    log = record.load(where, host.name, scope, place)
    if not record.undoable(log):
        record.drop(where)
        return [f"nothing to undo: install has not changed {host.title}'s settings "
                + ("in this project" if scope == "project" else "in your home")
                + " (or it was undone)"]
    steps = [_plan(Path(real), entry) for real, entry in log["files"].items()]
    said = _settings_back(host, log)
    for step in steps:
        said += step()
    record.drop(where)
    return said


def _plan(real: Path, entry: dict[str, Any]) -> Step:
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
        return lambda: _remove(path, real, now, entry["folders"], "install created it")
    if untouched and copy is not None:
        return lambda: _restore(path, real, now, copy)
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
        return lambda: _remove(path, real, now, entry["folders"],
                               f"it {why}, and held nothing but mailslot's entries")
    text = settings_files.dumped_doc(entry["kind"], path, doc, now)
    return lambda: _write(path, real, now, text, copy,
                          f"{path} {why}: took out only mailslot's entries, the rest stays")


def _remove(path: Path, real: Path, now: str | None, folders: list[str], why: str
            ) -> list[str]:
    settings_files.remove_file(real, now)
    settings_files.remove_folders(folders)
    return [f"removed {path} ({why})"]


def _restore(path: Path, real: Path, now: str | None, copy: str) -> list[str]:
    return _write(path, real, now, copy, copy, f"restored {path} as it was before install")


def _write(path: Path, real: Path, now: str | None, text: str, copy: str | None,
           said: str) -> list[str]:
    settings_files.write_atomic(real, text, now)
    return [said, *_drop_copy(real, copy)]


def _drop_copy(real: Path, copy: str | None) -> list[str]:
    if copy is None:
        return []
    settings_files.remove_file(settings_files.backup_of(real), copy, private=True)
    return [f"removed the copy {settings_files.backup_of(real)}"]


def _settings_back(host: Host, log: record.Record) -> list[str]:
    """The agent's settings in the mailbox put back as they were before the install."""
    settings, agent, mailbox = log["settings"], log.get("agent"), log.get("mailbox")
    keys, bridge = settings.get("keys", []), settings.get("bridge")
    if agent is None or (not keys and bridge is None):
        return []
    box = Mailbox.open(mailbox, agent)
    where = f"{box.store.location}/config.json"
    if not box.store.exists():
        return [f"the mailbox {box.store.location} is gone: its settings left as they are"]
    said = []
    if bridge is not None and settings_of(host, agent, mailbox)[1] == bridge[1]:
        said += bridge_ask(host, agent, bridge[0], mailbox)
    if keys or not settings.get("existed", True):
        back, left = box.put_back_settings(
            agent, [{"key": op["path"][0], **{k: op[k] for k in ("before", "after") if k in op}}
                    for op in keys], drop_empty=not settings.get("existed", True))
        if back:
            said.append(f"put back agents.{agent}'s {', '.join(back)} in {where} as before "
                        "install")
        if left:
            said.append(f"left agents.{agent}'s {', '.join(left)} in {where} as they are: "
                        "changed since install")
    return said
