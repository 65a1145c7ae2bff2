"""The file store writes the same files as before the store became primitives.

The same mailbox is built (tests/layout_driver.py: sends, reads, replies, broadcasts, a
gate, per-session state, presence, the registry, fences, marks, the session log, the
governor's buckets, month archives, a quarantine, a mailbox set aside, then a migration
into a second folder) by the mailslot of :data:`BEFORE` and by this one, each in its own
process with its own ``PYTHONPATH``, clock and random bytes fixed; then the two trees are
compared name by name, mode by mode and byte by byte. The only bytes masked are the
stamps the counts kept in ``tally/`` carry (a folder's inode and modification time,
which no two runs share), and what features added since :data:`BEFORE` write, each in
docs/format.md (:func:`_added_since`), taken out of today's tree only.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BEFORE = "571b7af11b5f0e9fc5063bd10b7d124a4064df2f"
"""The commit the store was reshaped from (its file layout is docs/format.md's)."""
REPO = Path(__file__).resolve().parent.parent
DRIVER = Path(__file__).resolve().parent / "layout_driver.py"


def _old_sources(into: Path) -> Path:
    """``src/`` of :data:`BEFORE`, unpacked into ``into``; skips without git history."""
    try:
        subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{BEFORE}^{{commit}}"],
                       check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip(f"git history with commit {BEFORE} is not available here (a shallow "
                    "clone or an unpacked archive): the old layout cannot be built")
    archive = subprocess.run(["git", "-C", str(REPO), "archive", BEFORE, "src"],
                             check=True, capture_output=True).stdout
    into.mkdir()
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "src"


def _build(src: Path, where: Path) -> list[dict[str, tuple[str, int, bytes]]]:
    """The trees the driver builds with the mailslot in ``src``, in ``where`` (the same
    folder for both versions: a path is part of what a message says)."""
    shutil.rmtree(where, ignore_errors=True)
    where.mkdir()
    root, copy = where / "mailbox", where / "copy"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAILSLOT_")}
    env.update(PYTHONPATH=str(src), TZ="UTC", HOME=str(where), PYTHONDONTWRITEBYTECODE="1",
               MAILSLOT_ON_DEMAND_WATCHER="0")  # no watcher: it would take the wakes
    subprocess.run([sys.executable, str(DRIVER), str(root), str(copy)], env=env,
                   check=True, timeout=300, cwd=where)
    return [tree(root), tree(copy)]


def _masked(name: str, data: bytes) -> bytes:
    """Kept counts without their folder stamps (inode, mtime: no two runs share them)."""
    if name.startswith("tally/") and name.endswith(".json"):
        record = json.loads(data)
        if isinstance(record.get("done"), list):
            record["done"][1:3] = ["ino", "mtime"]
        return json.dumps(record, sort_keys=True).encode()
    if name.startswith("tally/") and name.endswith(".ids"):
        head, _, rest = data.partition(b"\n")
        words = head.split(b" ")
        return b" ".join([*words[:2], b"ino", b"mtime", *words[4:]]) + b"\n" + rest
    return data


_HEADER_SINCE = re.compile(rb"^(?:cause: .*|ack: true)\n", re.M)
"""Header fields added since: a message's ``cause`` and ``ack`` (the loop governor)."""
_BUCKET_SINCE = re.compile(rb"^\S*\.-\S* .*\n", re.M)
"""Buckets added since: bytes and turns per conversation (``sends.A.-bytes``,
``sends.A.-tX``, ``wakes.-tX.A``: a key part starting with ``-``)."""


def _added_since(tree: dict[str, tuple[str, int, bytes]]
                 ) -> dict[str, tuple[str, int, bytes]]:
    """``tree`` without what features added after :data:`BEFORE` write (each documented
    in docs/format.md), so the rest can be compared byte for byte."""
    kept = {}
    for name, (kind, mode, data) in tree.items():
        if name.startswith("limits/") and kind == "file":
            if name.startswith("limits/wakes.-"):
                continue  # a conversation's own file of turns woken
            data = _BUCKET_SINCE.sub(b"", data)
        elif name.endswith(".md") and kind == "file" and data.startswith(b"---\n"):
            end = data.find(b"\n---\n", 4) + 1
            data = _HEADER_SINCE.sub(b"", data[:end]) + data[end:]
        kept[name] = (kind, mode, data)
    return kept


def tree(root: Path) -> dict[str, tuple[str, int, bytes]]:
    """Every folder and file under ``root``: its kind, mode and (masked) bytes."""
    found = {}
    for top, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(top) / name
            rel = path.relative_to(root).as_posix()
            info = path.lstat()
            if path.is_symlink():
                found[rel] = ("link", info.st_mode, os.readlink(path).encode())
            elif path.is_dir():
                found[rel] = ("folder", info.st_mode, b"")
            else:
                found[rel] = ("file", info.st_mode, _masked(rel, path.read_bytes()))
    return found


def _differences(old: dict[str, tuple[str, int, bytes]],
                 new: dict[str, tuple[str, int, bytes]]) -> list[str]:
    lines = [f"only before: {n}" for n in sorted(set(old) - set(new))]
    lines += [f"only now: {n}" for n in sorted(set(new) - set(old))]
    for name in sorted(set(old) & set(new)):
        if old[name] != new[name]:
            (kind, mode, data), (kind2, mode2, data2) = old[name], new[name]
            lines.append(f"{name}: {kind} {mode:o} {data[:300]!r} now {kind2} {mode2:o} "
                         f"{data2[:300]!r}")
    return lines


def test_the_file_store_writes_the_same_files_as_before(tmp_path: Path) -> None:
    old_src = _old_sources(tmp_path / "old-src")
    old = _build(old_src, tmp_path / "run")
    new = _build(REPO / "src", tmp_path / "run")
    for built, again in zip(old, new, strict=True):
        assert len(built) > 60  # the mailbox really was built
        assert _differences(built, _added_since(again)) == []
