"""Reading and writing a host's settings file without ever leaving it half-written.

A file is parsed whole before anything is written; a file that does not parse is an
error and is left untouched. Every file is opened without following a link and only
when it is a regular file of this user (a copy install keeps: also 0600); where a link
leads is decided by the caller, before (:mod:`mailslot.frontends.install.planning`). Writing goes
to a temporary file beside the target, synced, then renamed over it (keeping its
permissions), so a user's settings file that is a symlink (a dotfiles checkout) stays
one: its target is written.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import subprocess
from collections.abc import Callable, MutableMapping, Sequence
from pathlib import Path
from typing import Any

from ...core.durable import CLOEXEC, open_file, replace_file
from ...core.errors import InvalidInput, StoreError, UnsafePath

Editor = Callable[[MutableMapping[str, Any]], None]


def read_text(path: Path, *, private: bool = False) -> str | None:
    """The text of the file at ``path`` (``None``: no such file).

    Opened without following a link and without waiting on a FIFO, and read only when
    it is a regular file of this user (``private``: also unreadable by others, as a
    copy install keeps is): anything else is refused in one line naming it.
    """
    try:
        fd = open_file(str(path), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | CLOEXEC)
    except FileNotFoundError:
        return None
    except UnsafePath as exc:
        raise UnsafePath(f"{exc}; nothing was changed") from None
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as file:
        _check_owner(path, os.fstat(file.fileno()), private)
        data = file.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(f"{path} is not UTF-8 text; nothing was changed") from None


def _check_owner(path: Path, info: os.stat_result, private: bool) -> None:
    """Refuse another user's file, and (``private``) one that others may read."""
    if info.st_uid != os.geteuid():
        raise UnsafePath(f"{path} belongs to another user (uid {info.st_uid}); mailslot "
                         "reads only your own files here: nothing was changed")
    if private and info.st_mode & 0o077:
        raise UnsafePath(f"{path} is not a file mailslot kept (mode "
                         f"{info.st_mode & 0o777:o}, not 600): nothing was changed")


def indent_of(text: str | None) -> int | str:
    """The indentation the file already uses (two spaces for a new file)."""
    for line in (text or "").splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and stripped != line:
            lead = line[: len(line) - len(stripped)]
            return "\t" if lead.startswith("\t") else len(lead)
    return 2


def edit_doc(kind: str, path: Path, text: str | None, editors: list[Editor]) -> str:
    """The file's new text after ``editors`` (``kind``: ``json``, or ``toml``, whose
    comments and layout tomlkit keeps); the same text if nothing changed."""
    doc = editable_doc(kind, path, text or "")
    before = _values(doc)
    for edit in editors:
        edit(doc)
    if text is not None and _values(doc) == before:
        return text
    return dumped_doc(kind, path, doc, text or "")


def _values(doc: MutableMapping[str, Any]) -> Any:
    """A copy of what ``doc`` holds, as plain values."""
    unwrap = getattr(doc, "unwrap", None)
    return unwrap() if callable(unwrap) else json.loads(json.dumps(doc))


def plain_doc(kind: str, text: str | None) -> dict[str, Any]:
    """A settings file's text (``kind``: ``json`` or ``toml``) as plain values; a file
    that holds no object is an empty one (``install`` checked it when it read it)."""
    if kind == "toml":
        import tomllib

        return tomllib.loads(text or "")
    doc = json.loads(text) if text and text.strip() else {}
    return doc if isinstance(doc, dict) else {}


def editable_doc(kind: str, path: Path, text: str) -> MutableMapping[str, Any]:
    """A settings file's text parsed to be changed and written back as
    :func:`dumped_doc` (TOML keeps its comments and layout)."""
    if kind == "toml":
        import tomlkit
        from tomlkit.exceptions import TOMLKitError

        try:
            return tomlkit.parse(text)
        except TOMLKitError as exc:
            raise InvalidInput(f"{path} is not valid TOML ({exc}); fix it first, "
                               "nothing was changed") from None
    try:
        doc = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise InvalidInput(f"{path} is not valid JSON ({exc}); fix it first, "
                           "nothing was changed") from None
    if not isinstance(doc, dict):
        raise InvalidInput(f"{path} must hold a JSON object; nothing was changed")
    return doc


def dumped_doc(kind: str, path: Path, doc: MutableMapping[str, Any], text: str) -> str:
    """``doc`` as the text of the file ``path`` that held ``text``; never a text its
    host could not read."""
    if kind == "toml":
        import tomllib

        import tomlkit

        result = tomlkit.dumps(doc)
        try:
            tomllib.loads(result)
        except tomllib.TOMLDecodeError as exc:
            raise InvalidInput(f"{path}: cannot merge safely ({exc}); nothing was "
                               "changed") from None
        return result
    return json.dumps(doc, indent=indent_of(text), ensure_ascii=False) + "\n"


def diff(path: Path, before: str | None, after: str) -> str:
    lines = difflib.unified_diff(
        (before or "").splitlines(keepends=True), after.splitlines(keepends=True),
        fromfile="/dev/null" if before is None else str(path), tofile=str(path),
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def missing_folders(folder: Path) -> list[Path]:
    """The folders writing a file in ``folder`` would create, outermost first."""
    made: list[Path] = []
    while not os.path.lexists(folder):
        made.insert(0, folder)
        folder = folder.parent
    return made


def write_atomic(path: Path, text: str, expected: str | None) -> None:
    """Replace the file at ``path`` (where it really is: a link is never written through
    here) with ``text``, unless it changed since it was read as ``expected``."""
    if read_text(path) != expected:
        raise StoreError(f"{path} changed while mailslot was editing it; run the command again")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = os.lstat(path).st_mode & 0o7777 if expected is not None else 0o644
        replace_file(str(path), text, mode)
    except OSError as exc:
        raise StoreError(f"cannot write {path}: {exc.strerror or exc}") from None


def remove_file(path: Path, expected: str | None, *, private: bool = False) -> None:
    """Remove the file at ``path`` if it still holds ``expected`` (a link or anything
    but a regular file of this user is refused by the read)."""
    if read_text(path, private=private) != expected:
        raise StoreError(f"{path} changed while mailslot was editing it; run the command again")
    try:
        os.unlink(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StoreError(f"cannot remove {path}: {exc.strerror or exc}") from None


def remove_folders(made: Sequence[str]) -> None:
    """Remove the folders install created (innermost first) that are empty again."""
    for folder in reversed(made):
        try:
            os.rmdir(folder)
        except OSError:
            return  # not empty (something of yours), or gone: it stays


def digest(text: str | None) -> str | None:
    """What identifies a file's text in install's record (``None``: no file)."""
    return None if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


BACKUP = ".mailslot-backup"
"""Beside a settings file ``install`` changed: the bytes it held before (0600)."""


def backup_of(real: Path) -> Path:
    """Where the previous bytes of the settings file ``real`` are kept."""
    return real.with_name(real.name + BACKUP)


def keep_backup(real: Path, before: str) -> Path:
    """Keep ``before`` (the file's text before install first changed it) beside ``real``,
    0600 and whole or not at all; where it is. Whatever holds the copy's name already
    must be a copy mailslot kept (a link, a FIFO, another user's or a readable file is
    refused: nothing is changed)."""
    path = backup_of(real)
    read_text(path, private=True)
    try:
        replace_file(str(path), before)  # 0600
    except OSError as exc:
        raise StoreError(f"cannot keep a copy of {real} in {path}: {exc.strerror or exc}; "
                         "nothing was changed") from None
    return path


def read_backup(real: Path, kept: str) -> str | None:
    """The copy install kept of ``real`` (``None``: it is gone), checked as a copy
    mailslot wrote and against its digest ``kept`` in install's record."""
    path = backup_of(real)
    text = read_text(path, private=True)
    if text is not None and digest(text) != kept:
        raise UnsafePath(f"{path} is not the copy install kept (it changed since): nothing "
                         "was changed; remove it and undo again to take out only "
                         "mailslot's entries")
    return text


def git_ignored(root: Path, path: Path) -> bool | None:
    """Whether git ignores ``path`` (``None``: not in a git checkout, or no git)."""
    try:
        done = subprocess.run(["git", "-C", str(root), "check-ignore", "-q", str(path)],
                              capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return {0: True, 1: False}.get(done.returncode)
