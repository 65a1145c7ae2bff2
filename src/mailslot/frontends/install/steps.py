"""A step of ``mailslot install``: one thing it changes, and how ``install --undo`` takes
it back.

``install HOST`` is a plan of steps (:mod:`.planning` builds it from the host's
declarations and the options): a settings file (:class:`~.file_step.FileStep`), or the
agent's settings in the mailbox's config.json (:class:`~.settings_step.SettingsStep`).
Each step says what it reads and what it would write (``--dry-run``), and puts into
install's record (:mod:`.record`) what its undo needs; the module of each kind of step
holds both directions: how it writes, and how the undo reads its part of the record back
(``recorded``) and takes it back. So every step that writes declares its undo, and
``install --undo`` replays them in reverse (:mod:`.undoing`).

``install`` runs the steps in phases (:func:`~.changes.install`): every step is checked
before anything is written, then each keeps what its undo needs, the record is saved,
and only then is each written: all or nothing, and never a change without its undo.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from .record import Record


@dataclass(frozen=True)
class Written:
    """What writing one step did: the notes it has for the person, and whether it
    changed anything (a run that changed nothing says so in one line)."""

    notes: list[str]
    changed: bool


class Step(Protocol):
    """One change of a plan, in the phases :func:`~.changes.install` runs."""

    @property
    def reads(self) -> str:
        """What it reads: a settings file, or the agent's entry in config.json."""
        ...

    def dry_run(self) -> list[str]:
        """``--dry-run``: the notes that say what it would write (a file's own diff is
        shown from the file, :attr:`~.changes.Report.changes`)."""
        ...

    def check(self, log: Record) -> None:
        """Refuse, in one line, what would stop it being written or undone; reads only."""
        ...

    def keep(self, log: Record) -> list[str]:
        """Put into ``log`` (and beside a file, its copy) what its undo needs, before
        anything is written; notes."""
        ...

    def write(self, log: Record) -> Written:
        """Make the change (a change known only once made is recorded in ``log`` here)."""
        ...


Undo = Callable[[], list[str]]
"""One recorded step taken back, checked already (a refusal came before anything was
written): run, it says what it did, one line per thing."""
