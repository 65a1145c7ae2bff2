"""Reading and writing a host's settings file without ever leaving it half-written.

A file is parsed whole before anything is written; a file that does not parse is an
error and is left untouched. Writing goes to a temporary file beside the target, synced,
then renamed over it (keeping its permissions); a settings file that is a symlink (a
dotfiles checkout) is written through, so the link stays.
"""

from __future__ import annotations

import difflib
import json
import subprocess
from collections.abc import Callable, MutableMapping
from pathlib import Path
from typing import Any

from ..core.durable import replace_file
from ..core.errors import InvalidInput, StoreError

Editor = Callable[[MutableMapping[str, Any]], None]


def read_text(path: Path) -> str | None:
    """The file's text, or ``None`` if there is no such file."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise InvalidInput(f"{path} is not UTF-8 text; nothing was changed") from None
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from None


def _indent(text: str | None) -> int | str:
    """The indentation the file already uses (two spaces for a new file)."""
    for line in (text or "").splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and stripped != line:
            lead = line[: len(line) - len(stripped)]
            return "\t" if lead.startswith("\t") else len(lead)
    return 2


def edit_json(path: Path, text: str | None, editors: list[Editor]) -> str:
    """The file's new text after ``editors``; the same text if nothing changed."""
    if text is None or not text.strip():
        doc: Any = {}
    else:
        try:
            doc = json.loads(text)
        except ValueError as exc:
            raise InvalidInput(f"{path} is not valid JSON ({exc}); fix it first, "
                               "nothing was changed") from None
        if not isinstance(doc, dict):
            raise InvalidInput(f"{path} must hold a JSON object; nothing was changed")
    before = json.loads(json.dumps(doc))
    for edit in editors:
        edit(doc)
    if text is not None and doc == before:
        return text
    return json.dumps(doc, indent=_indent(text), ensure_ascii=False) + "\n"


def edit_toml(path: Path, text: str | None, editors: list[Editor]) -> str:
    """As :func:`edit_json`, for TOML, keeping comments and layout (tomlkit)."""
    import tomllib

    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        doc = tomlkit.parse(text or "")
    except TOMLKitError as exc:
        raise InvalidInput(f"{path} is not valid TOML ({exc}); fix it first, "
                           "nothing was changed") from None
    before = doc.unwrap()
    for edit in editors:
        edit(doc)
    if text is not None and doc.unwrap() == before:
        return text
    result = tomlkit.dumps(doc)
    try:
        tomllib.loads(result)
    except tomllib.TOMLDecodeError as exc:  # never write what a host could not read
        raise InvalidInput(f"{path}: cannot merge safely ({exc}); nothing was changed") from None
    return result


def diff(path: Path, before: str | None, after: str) -> str:
    lines = difflib.unified_diff(
        (before or "").splitlines(keepends=True), after.splitlines(keepends=True),
        fromfile="/dev/null" if before is None else str(path), tofile=str(path),
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def write_atomic(path: Path, text: str, expected: str | None) -> None:
    """Replace ``path`` with ``text`` unless someone changed it since we read ``expected``."""
    target = path.resolve() if path.is_symlink() else path
    if read_text(target) != expected:
        raise StoreError(f"{path} changed while mailslot was editing it; run the command again")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        mode = target.stat().st_mode & 0o7777 if expected is not None else 0o644
        replace_file(str(target), text, mode)
    except OSError as exc:
        raise StoreError(f"cannot write {path}: {exc.strerror or exc}") from None


BACKUP = ".mailslot-backup"
"""Beside a settings file ``install`` changed: the bytes it held before (0600)."""


def backup_of(real: Path) -> Path:
    """Where the previous bytes of the settings file ``real`` are kept."""
    return real.with_name(real.name + BACKUP)


def keep_backup(real: Path, before: str) -> Path:
    """Keep ``before`` (the file's text before a change) beside ``real``, 0600 and whole
    or not at all; where it is. A newer change's copy replaces an older one."""
    path = backup_of(real)
    try:
        replace_file(str(path), before)  # 0600
    except OSError as exc:
        raise StoreError(f"cannot keep a copy of {real} in {path}: {exc.strerror or exc}; "
                         "nothing was changed") from None
    return path


def git_ignored(root: Path, path: Path) -> bool | None:
    """Whether git ignores ``path`` (``None``: not in a git checkout, or no git)."""
    try:
        done = subprocess.run(["git", "-C", str(root), "check-ignore", "-q", str(path)],
                              capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return {0: True, 1: False}.get(done.returncode)
