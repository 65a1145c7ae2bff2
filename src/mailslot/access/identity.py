"""Who is speaking: derived from how the process was started, never invented.

Order: ``--agent``, then ``MAILSLOT_AGENT``, then the basename of the git toplevel that
holds the working folder, made into a name by :func:`mailslot.core.names.from_folder`
(``My_App`` → ``my-app``). Never the working folder's own name, never a tool argument.

On the hook path, so it uses ``os.path`` rather than ``pathlib`` and no dataclass.
"""

from __future__ import annotations

import os

from ..core.names import from_folder

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping


class Identity:
    """A raw name and where it came from (checked by the service, not here)."""

    __slots__ = ("name", "path", "source")

    def __init__(self, name: str, source: str, path: str | None = None) -> None:
        self.name = name
        self.source = source  # "--agent", "MAILSLOT_AGENT" or "git"
        self.path = path  # the git toplevel, when that is the source

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Identity):
            return NotImplemented
        return (self.name, self.source, self.path) == (other.name, other.source, other.path)

    def __hash__(self) -> int:
        return hash((self.name, self.source, self.path))

    def __repr__(self) -> str:
        return f"Identity(name={self.name!r}, source={self.source!r}, path={self.path!r})"


def git_toplevel(start: str | os.PathLike[str]) -> str | None:
    """The nearest folder at or above ``start`` holding ``.git`` (folder or worktree file).

    Walking up is what ``git rev-parse --show-toplevel`` does for ordinary checkouts and
    linked worktrees, without starting a process on every hook call.
    """
    folder = os.path.abspath(start)
    while True:
        if os.path.exists(os.path.join(folder, ".git")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def derive_identity(
    explicit: str | None = None,
    env: Mapping[str, str] = os.environ,
    cwd: str | os.PathLike[str] | None = None,
) -> Identity | None:
    if explicit is not None:
        return Identity(explicit, "--agent")
    if env.get("MAILSLOT_AGENT"):
        return Identity(env["MAILSLOT_AGENT"], "MAILSLOT_AGENT")
    top = git_toplevel(cwd if cwd is not None else os.getcwd())
    if top is None:
        return None
    return Identity(from_folder(os.path.basename(top)), "git", top)
