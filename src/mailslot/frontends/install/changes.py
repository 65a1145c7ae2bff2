"""``mailslot install HOST``: the plan's steps checked, kept and written (see the package).

The plan (:mod:`.planning`) has read and edited every file and made every refusal. Then
every step is checked (:mod:`.steps`); each keeps in the record what its undo needs (a
file's copy beside it); the record is saved; and only then is each step written, so
nothing is written that the record cannot take back. ``--dry-run`` stops after the plan.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ...core.errors import MailslotError
from . import entries, record, settings_files
from .file_step import FileStep
from .planning import InstallOptions, Plan, plan_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ...host_registry import Host
    from ...host_registry.host import Scope


@dataclass(frozen=True)
class Report:
    host: Host
    scope: Scope
    agent: str
    changes: list[FileStep]
    notes: list[str]
    dry_run: bool = False
    warnings: list[str] = field(default_factory=list)
    quiet: bool = False  # a run that changed nothing: notes shown before are left out


def install(host_name: str, agent: str, options: InstallOptions | None = None) -> Report:
    """Plan every step, refuse before writing anything if one is wrong, then write each,
    and record what was done (:mod:`.record`) for ``install --undo``."""
    options = options or InstallOptions()
    plan = plan_of(host_name, agent, options)
    if options.dry_run:
        notes = plan.notes + [n for step in plan.steps for n in step.dry_run()]
        return Report(plan.host, plan.scope, agent, plan.files, notes, True, _warnings(plan))
    return _run(plan)


def _run(plan: Plan) -> Report:
    """Check every step, keep what each one's undo needs, save the record, then write."""
    where = record.where(plan.host.name, plan.scope, plan.place)
    log = record.load(where, plan.host.name, plan.scope, plan.place)
    log["agent"] = plan.agent
    for step in plan.steps:
        step.check(log)
    notes = plan.notes + [n for step in plan.steps for n in step.keep(log)]
    if any(f.changed for f in plan.files):
        record.save(where, log)  # before any file is written: each has its undo
    written = [step.write(log) for step in plan.steps]
    notes += [n for w in written for n in w.notes]
    return _said(plan, where, log, notes, any(w.changed for w in written))


def _said(plan: Plan, where: Path, log: record.Record, notes: list[str],
          changed: bool) -> Report:
    """The notes kept in the record, and the report: a run that changed nothing says
    it in one line, with only the notes never shown here."""
    shown = set(log["notes"])
    log["notes"] += [n for n in dict.fromkeys(notes) if n not in shown]
    record.save(where, log, unless_same=True)
    if not changed:
        notes = [n for n in notes if n not in shown]
    return Report(plan.host, plan.scope, plan.agent, plan.files, notes, False,
                  _warnings(plan), quiet=not changed)


def _warnings(plan: Plan) -> list[str]:
    """Project files of other hosts that would make this one act as another agent
    (:attr:`~mailslot.host_registry.host.Host.also_reads`)."""
    host, agent = plan.host, plan.agent
    out = []
    for rel in host.also_reads:
        path: Path = plan.project / rel
        try:
            text = settings_files.read_text(path)
            others = sorted(entries.registered_agents(json.loads(text or "{}")) - {agent})
        except (MailslotError, ValueError, AttributeError):
            continue
        if others:
            names = ", ".join(f"'{o}'" for o in others)
            out.append(f"{path} registers mailslot as agent {names}: {host.title} uses that "
                       f"file too in this project, and would then send and read mail as "
                       f"{names}, not as '{agent}'. Remove mailslot from it, or give both "
                       "hosts one agent name.")
    return out
