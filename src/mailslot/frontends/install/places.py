"""Where an install's files are, and which links it follows to reach them.

In a project (the git checkout, or the folder) no link is followed: a cloned repository
must not make ``install`` or its undo write anywhere else. In your home a settings file
that is a link (a dotfiles checkout) is followed to the regular file it leads to.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from ...access.identity import git_toplevel
from ...core.errors import InvalidInput

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ...host_registry.host import Scope


def project_of(cwd: Path | None = None) -> Path:
    """The project: the git checkout holding ``cwd`` (default: here), or ``cwd`` itself."""
    here = (cwd or Path.cwd()).absolute()
    top = git_toplevel(here)
    return Path(top) if top else here


def place_of(scope: Scope, home: Path | None = None, cwd: Path | None = None) -> Path:
    """Where the files of an install in ``scope`` are: the project, or your home."""
    return project_of(cwd) if scope == "project" else home or Path.home()


def checked_real(path: Path, project: Path | None = None,
                 named: Collection[Path] = ()) -> Path:
    """Where ``path`` really leads. In a ``project`` no link is followed: a file, or a
    folder on its way, that is a link is refused unless its real path is ``named``
    (``--allow-outside``), so a cloned repository cannot make ``install`` write
    anywhere else. In your home a link (a dotfiles checkout) is followed."""
    try:
        real = path.resolve()
    except (OSError, RuntimeError):
        raise InvalidInput(f"{path} is a link that leads nowhere (a loop); nothing was "
                           "changed") from None
    if project is None or real in named:
        return real
    if not real.is_relative_to(project.resolve()):
        raise InvalidInput(f"{path} leads out of the project, to {real}; nothing was "
                           f"changed (to write there, name it: --allow-outside {real})")
    if real != project.resolve() / path.relative_to(project):
        raise InvalidInput(f"{path} is reached through a link, to {real}; install follows "
                           "no link in a project: nothing was changed (to write there, "
                           f"name it: --allow-outside {real})")
    return real


def readable(path: Path, scope: Scope) -> Path:
    """Where to read a file only looked at (never through a link in a project)."""
    return checked_real(path) if scope == "user" else path
