"""Who is speaking: derived from how the process was started, never invented.

Order: ``--agent``, then ``MAILSLOT_AGENT``, then the basename of the git toplevel that
holds the working folder. Never the working folder's own name, never a tool argument.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Identity:
    """A raw name and where it came from (checked by the service, not here)."""

    name: str
    source: str  # "--agent", "MAILSLOT_AGENT" or "git"
    path: Path | None = None  # the git toplevel, when that is the source


def git_toplevel(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` holding ``.git`` (folder or worktree file).

    Walking up is what ``git rev-parse --show-toplevel`` does for ordinary checkouts and
    linked worktrees, without starting a process on every hook call.
    """
    path = start.absolute()
    for folder in (path, *path.parents):
        if (folder / ".git").exists():
            return folder
    return None


def derive_identity(
    explicit: str | None = None,
    env: Mapping[str, str] = os.environ,
    cwd: Path | None = None,
) -> Identity | None:
    if explicit is not None:
        return Identity(explicit, "--agent")
    if env.get("MAILSLOT_AGENT"):
        return Identity(env["MAILSLOT_AGENT"], "MAILSLOT_AGENT")
    top = git_toplevel(cwd if cwd is not None else Path.cwd())
    if top is None:
        return None
    return Identity(top.name, "git", top)
