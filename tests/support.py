"""Helpers shared by tests: message factories and a picture of a mailbox folder."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from mailslot.ids import new_id
from mailslot.message import Message

BASE = datetime(2026, 9, 21, 12, 0, tzinfo=UTC)


def make_message(sender: str = "claude", to: tuple[str, ...] = ("gemini",),
                 subject: str = "hello", body: str = "hi", n: int = 0) -> Message:
    """A message whose id sorts by ``n``."""
    when = BASE + timedelta(seconds=n)
    return Message(new_id(when, sender, list(to), subject), when.isoformat(), sender, to,
                   subject, body)


def snapshot(root: Path) -> dict[str, tuple[str, int, str]]:
    """Every path under ``root``: kind, permission bits and (for files) a content hash.

    Two equal snapshots mean nothing was written, created, removed or re-permissioned.
    """
    seen: dict[str, tuple[str, int, str]] = {}
    if not root.exists():
        return seen
    for top, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(top) / name
            info = os.lstat(path)
            rel = str(path.relative_to(root))
            if stat.S_ISLNK(info.st_mode):
                seen[rel] = ("link", 0, os.readlink(path))
            elif stat.S_ISDIR(info.st_mode):
                seen[rel] = ("dir", stat.S_IMODE(info.st_mode), "")
            else:
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                seen[rel] = ("file", stat.S_IMODE(info.st_mode), digest)
    return seen


def files_in(folder: Path) -> list[str]:
    """Names in ``folder`` (empty when it does not exist), sorted."""
    return sorted(os.listdir(folder)) if folder.is_dir() else []


def run_cli(*argv: str, stdin: bytes = b"", cwd: Path | None = None,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI as a real process (``python -m mailslot``), in the test's environment."""
    proc = subprocess.run(
        [sys.executable, "-m", "mailslot", *argv], input=stdin, capture_output=True,
        cwd=cwd, env=env, timeout=60, check=False,
    )
    return subprocess.CompletedProcess(proc.args, proc.returncode,
                                       proc.stdout.decode(), proc.stderr.decode())
