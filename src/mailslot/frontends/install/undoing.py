"""``mailslot install --undo HOST``: take back what ``install`` did, from its record.

Each step install wrote left in the record what its undo needs (:mod:`.steps`); the undo
reads each back with the module that wrote it (:mod:`.file_step`, :mod:`.settings_step`),
which checks it: each file is where install wrote it (no link now leads elsewhere), a
regular file of yours, and its copy (``FILE.mailslot-backup``) a 0600 file of yours
holding what the record says; one refusal and nothing changes. Then the steps are taken
back in the reverse of install's order: the agent's settings in the mailbox, then each
file. Last, the record goes: a second undo has nothing to do, and says so.
"""

from __future__ import annotations

from pathlib import Path

from ... import host_registry as hosts
from . import file_step, record, settings_step
from .places import place_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ...host_registry import Host
    from ...host_registry.host import Scope
    from .steps import Undo


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
    said = []
    for step in reversed(recorded(host, log)):
        said += step()
    record.drop(where)
    return said


def recorded(host: Host, log: record.Record) -> list[Undo]:
    """The undo of every step in ``log``, in install's order (the files, then the
    mailbox's settings), each checked before any is run."""
    return [*file_step.recorded(log), *settings_step.recorded(host, log)]
