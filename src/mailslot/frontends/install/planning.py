"""The plan of one ``mailslot install HOST``: its steps, made from the host's declarations
(:mod:`mailslot.host_registry`) and the options.

Making the plan writes nothing: every file is read and edited in memory, and every
refusal an option or a file can cause (a flag the host does not offer, a file that does
not parse, a link out of the project, another agent's entry, no wake that works) comes
here, before any step is written (:mod:`.changes` then checks, keeps and writes them).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ... import host_registry as hosts
from ...core.errors import InvalidInput, MailslotError
from ...service.mailbox import Mailbox
from ..http.client import SECRET_ENV
from . import entries, settings_files
from .file_step import FileStep
from .places import checked_real, project_of, readable
from .remote_entries import LOCAL_KEYS, REMOTE_KEYS, is_remote_hook, remote_entry
from .settings_files import Editor
from .settings_step import SettingsStep, WakeAsk

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ...host_registry import Host
    from ...host_registry.host import Scope
    from ...wake.choice import Step as Rung
    from .steps import Step

Edits = dict[Path, list[Editor]]
"""The settings files to edit, each with what edits it, in the order first named."""


@dataclass(frozen=True)
class InstallOptions:
    """How to install: ``install HOST``'s options, and where (a test names its home and
    folder; by default yours and this one)."""

    scope: Scope | None = None  # None: the host's default
    hooks: bool = False
    wake: bool = False
    channel: bool = False
    sidecar: bool = False
    bridge: bool = False
    dry_run: bool = False
    mailbox_dir: str | None = None
    executable: str | None = None  # None: this installation's `mailslot`
    home: Path | None = None
    cwd: Path | None = None
    allow_outside: Sequence[str] = ()
    credential: str | None = None
    remote: str | None = None


@dataclass(frozen=True)
class Plan:
    """What one ``install`` does: its steps (the files, then the mailbox's settings) and
    the notes it says first."""

    host: Host
    agent: str
    scope: Scope
    place: Path  # the project, or your home: whose record this install's is
    project: Path
    files: list[FileStep]
    settings: SettingsStep | None
    notes: list[str]

    @property
    def steps(self) -> list[Step]:
        return [*self.files, *([] if self.settings is None else [self.settings])]


@dataclass(frozen=True)
class _Site:
    """Where this install writes and which command it registers: what each step is
    made from."""

    host: Host
    agent: str
    options: InstallOptions
    scope: Scope
    home: Path
    project: Path
    exe: str
    mailbox: str | None  # the mailbox as the registered commands name it
    named: frozenset[Path]  # --allow-outside

    @property
    def tail(self) -> list[str]:
        """How every local command it registers ends: who, and which mailbox."""
        return ["--agent", self.agent, *(["--dir", self.mailbox] if self.mailbox else [])]

    def where(self, rel: str) -> Path:
        return self.home / rel[2:] if rel.startswith("~/") else self.project / rel

    def inside(self, path: Path) -> Path:
        """Where ``path`` really leads (see :func:`~.places.checked_real`)."""
        return checked_real(path, self.project if self.scope == "project" else None,
                            self.named)


def plan_of(host_name: str, agent: str, options: InstallOptions) -> Plan:
    """The plan of ``install host_name`` as ``agent``: every refusal made, nothing
    written.

    A project file that is (or sits in a folder that is) a link is refused unless its
    real path is in ``allow_outside`` (:func:`~.places.checked_real`): a cloned
    repository must not make ``install`` rewrite the user's own settings elsewhere.
    """
    host = hosts.host(host_name)
    _refuse_wakes(host, options)
    _refuse_extras(host, options)
    site = _site(host, agent, options)
    present = _present_hooks(site)
    chosen = _choose(site, options.hooks or bool(present)) \
        if options.wake and options.remote is None else None
    waiter = chosen is not None and chosen.method in host.waiter_methods
    mcp = site.where(host.mcp_path[site.scope])
    files, edits = _server(site, mcp, waiter)
    yours = _sidecar(site, edits) if options.sidecar else set()
    notes = list(host.install_notes.get(site.scope, ()))
    if _hooks_wanted(site, present, waiter, notes):
        notes += _hooks(site, edits, waiter)
    said = {mcp: (_remote_note(host),)} if options.remote is not None else {}
    files += _file_steps(site, edits, yours, mcp, said)
    notes += [n for f in files if f.in_project and (n := _git_advice(site.project, f.path))]
    place = site.project if site.scope == "project" else site.home
    return Plan(host, agent, site.scope, place, site.project, files,
                _settings_step(site, chosen), notes)


def find_executable() -> str:
    """The absolute path of this installation's ``mailslot`` command."""
    beside = Path(sys.executable).parent / "mailslot"
    candidates = [beside, Path(sys.argv[0]) if Path(sys.argv[0]).name == "mailslot" else None]
    for path in candidates:
        if path is not None and path.is_file() and os.access(path, os.X_OK):
            return str(path.absolute())
    found = shutil.which("mailslot")
    if found is None:
        raise InvalidInput("cannot find the mailslot command to register; install mailslot "
                           "so that `mailslot` is on PATH")
    return str(Path(found).absolute())


def _refuse_wakes(host: Host, o: InstallOptions) -> None:
    """``--channel`` where the host has none, or with ``--wake``."""
    if o.channel and "channel" not in host.install_wakes:
        offered = hosts.listed(hosts.names(lambda h: "channel" in h.install_wakes))
        raise InvalidInput(f"--channel works only for {offered} (a channel into the "
                           "session)")
    if o.wake and o.channel:
        raise InvalidInput(f"choose one way to wake {host.title}: --wake or --channel")


def _refuse_extras(host: Host, o: InstallOptions) -> None:
    """``--sidecar``, ``--bridge`` and ``--hooks`` where the host has none, or (the first
    two, which run beside the mailbox) with ``--remote``."""
    if o.sidecar and not host.sidecar:
        raise InvalidInput("--sidecar works only for "
                           + hosts.listed(hosts.names(lambda h: h.sidecar)))
    if o.sidecar and o.remote is not None:
        raise InvalidInput("--sidecar writes into a mailbox on this machine; not with --remote")
    if o.bridge and host.bridge() is None:
        raise InvalidInput("--bridge works only for "
                           + hosts.listed(hosts.names(lambda h: h.bridge() is not None)))
    if o.bridge and o.remote is not None:
        raise InvalidInput("--bridge runs beside the mailbox on this machine; not with "
                           "--remote")
    if o.hooks and host.hook_file is None and host.mcp_format != "extension":
        raise InvalidInput(f"{host.title} has no documented hook that can show mail; install it "
                           "without --hooks (its agents use the MCP tools)")


def _site(host: Host, agent: str, o: InstallOptions) -> _Site:
    scope = o.scope or host.default_scope
    project = project_of(o.cwd)
    exe = o.executable or find_executable()
    mailbox = _mailbox_word(o.mailbox_dir) if o.mailbox_dir else None
    return _Site(host, agent, o, scope, o.home or Path.home(), project, exe, mailbox,
                 frozenset(Path(p).expanduser().resolve() for p in o.allow_outside))


def _server(site: _Site, mcp: Path, waiter: bool) -> tuple[list[FileStep], Edits]:
    """The MCP server's entry: a file of mailslot's own (an extension, written whole,
    its step made here) or an edit of the host's settings; with ``--remote``, the entry
    that reaches ``serve --http`` there."""
    host, o = site.host, site.options
    files: list[FileStep] = []
    edits: Edits = {}
    if host.mcp_format == "extension":
        files.append(_extension(site, mcp, waiter))
    else:
        serve, tail = ["serve", "--channel"] if o.channel else ["serve"], site.tail
        if o.credential is not None:  # the server's identity comes from the credential
            serve, tail = [*serve, "--credential", _absolute(o.credential)], tail[2:]
        edits[mcp] = [_set_server(site, mcp, host.server_entry(site.exe, [*serve, *tail]),
                                  REMOTE_KEYS)]
    if o.remote is not None:  # the host reaches `serve --http` at remote
        if o.wake or o.channel:
            raise InvalidInput("--wake and --channel need the mailbox on this machine; "
                               "not with --remote")
        edits[mcp] = [_set_server(site, mcp, remote_entry(host, o.remote), LOCAL_KEYS)]
    return files, edits


def _set_server(site: _Site, mcp: Path, fields: dict[str, Any],
                drop: tuple[str, ...]) -> Editor:
    return partial(entries.set_server, container=site.host.mcp_container, fields=fields,
                   agent=site.agent, where=str(mcp), drop=drop)


def _extension(site: _Site, mcp: Path, waiter: bool) -> FileStep:
    """A file of mailslot's own, written whole; refused when it registers another agent."""
    real = site.inside(mcp)
    before = settings_files.read_text(real)
    if before is not None:
        entries.same_agent(site.host.extension_agent(before, str(mcp)), site.agent, str(mcp))
    whole = site.host.extension(site.exe, site.tail, site.agent, hooks=site.options.hooks,
                                wake=waiter)
    return FileStep(mcp, before, whole, site.scope == "project", real, "text")


def _sidecar(site: _Site, edits: Edits) -> set[Path]:
    """``--sidecar``: the host's entries for it, in files of your home whatever the
    scope (the paths: yours)."""
    folder = Mailbox.open(site.options.mailbox_dir, site.agent).store.folder
    if folder is None:
        raise InvalidInput("--sidecar needs a mailbox folder (the sidecar writes into "
                           "it); nothing was changed")
    yours: set[Path] = set()
    host = site.host
    for rel, define in host.sidecar_entries(site.exe, ["sidecar", host.name, "--dir", folder]):
        edits.setdefault(site.where(rel), []).append(define)
        yours.add(site.where(rel))
    return yours


def _hooks_wanted(site: _Site, present: list[str], waiter: bool, notes: list[str]) -> bool:
    """``--hooks``, or mailslot's hooks already there when they must follow this
    registration (said in ``notes``)."""
    remote = site.options.remote is not None
    if site.options.hooks:
        return True
    if any(is_remote_hook(c) != remote for c in present):
        notes.append("mailslot's hooks there were " + ("local" if remote else "remote")
                     + " ones: switched to " + ("remote" if remote else "local") + " too")
        return True  # they follow the server entry: never left reaching the old place
    if not waiter and any(_is_waiter(site.host, c) for c in present):
        notes.append("mailslot's hooks there had the background waiter (--wake): rewritten "
                     "without it, as this registration does not wake with it")
        return True  # a waiter this registration does not wake with would wait for nothing
    return False


def _hooks(site: _Site, edits: Edits, waiter: bool) -> list[str]:
    """The host's hook handlers (and its waiter, when it wakes with it) in its hooks
    file; the notes that go with them."""
    host, spec = site.host, site.host.hook_file
    if spec is None:
        return []
    path = site.where(spec.path[site.scope])
    tail = site.tail if site.options.remote is None else _remote_tail(site.options)

    def command(event: str) -> str:
        return shlex.join([site.exe, "hook", host.name, event, *tail])

    edits.setdefault(path, []).append(partial(
        entries.set_hooks, host=host, command=command, agent=site.agent, where=str(path),
        wake=command(host.wake_hook) if waiter and host.wake_hook else None))
    if host.also_runs is None:
        return list(spec.notes)
    other, files = host.also_runs
    return [*spec.notes, *(f"{host.title} also runs {hosts.host(other).title}'s hooks in {p}: "
                           "mail may be shown twice there; keep one of the two." for rel in files
                           if _has_our_hooks(p := site.where(rel)))]


def _remote_tail(o: InstallOptions) -> list[str]:
    """How a hook reaching ``serve --http`` ends: where, and the credential it reads."""
    assert o.remote is not None
    credential = ["--credential", _absolute(o.credential)] if o.credential is not None else []
    return ["--remote", o.remote, *credential]


def _remote_note(host: Host) -> str:
    return (f"{host.title} reads the secret from ${SECRET_ENV}: export it from the "
            "credential file in the agent's environment (docs/remote.md)")


def _file_steps(site: _Site, edits: Edits, yours: set[Path], mcp: Path,
                said: Mapping[Path, tuple[str, ...]]) -> list[FileStep]:
    """Each file read where it really is, and edited in memory (a file that does not
    parse is refused here)."""
    steps = []
    for path, editors in edits.items():
        real = checked_real(path) if path in yours else site.inside(path)
        text = settings_files.read_text(real)
        kind = "toml" if path == mcp and site.host.mcp_format == "toml" else "json"
        steps.append(FileStep(path, text, settings_files.edit_doc(kind, path, text, editors),
                              site.scope == "project" and path not in yours, real, kind,
                              said.get(path, ())))
    return steps


def _settings_step(site: _Site, chosen: Rung | None) -> SettingsStep | None:
    """The agent's settings in config.json this registration implies (none with
    ``--remote``: that mailbox is not on this machine)."""
    host, o = site.host, site.options
    stops = (*host.install_wakes.values(), *host.waiter_methods)  # only what install sets works
    if o.remote is not None or not (chosen or o.channel or stops or host.bridge()):
        return None
    return SettingsStep(host, site.agent, o.mailbox_dir, site.mailbox, _wake_asked(site, chosen),
                        stops, o.bridge)


def _wake_asked(site: _Site, chosen: Rung | None) -> WakeAsk | None:
    """The wake ``--wake`` chose, or the host's channel (``--channel``)."""
    if chosen is not None:
        return WakeAsk(chosen.method, chosen.fields,
                       f"wake: {chosen.method}, chosen: {chosen.said}")
    if site.options.channel:
        return WakeAsk(site.host.install_wakes["channel"], {}, "wake: channel")
    return None


def _choose(site: _Site, hooks: bool) -> Rung:
    """``--wake``: the first step of the host's ladder whose probe passes; refused in
    one line, before anything is written, when none does."""
    from ...wake.choice import probe, setup_for

    box = Mailbox.open(site.options.mailbox_dir, site.agent)
    setup = setup_for(box.store, box.config.agents().get(site.agent, {}), site.agent,
                      site.host, folder=str(site.project), hooks=hooks, env=os.environ)
    choice = probe(site.host, setup)
    if choice.chosen is None:
        raise InvalidInput(f"{choice.why_not()}; nothing was changed"
                           + ("" if choice.steps else " (install it without --wake)"))
    return choice.chosen


def _absolute(path: str) -> str:
    return str(Path(path).expanduser().absolute())


def _mailbox_word(mailbox: str) -> str:
    """The mailbox as the registered commands name it: a folder by its absolute path, a
    store URL as it is (made a path it would name a folder of this one). A password in
    the URL is refused: the settings files are not the place for it."""
    if "://" not in mailbox:
        return _absolute(mailbox)
    if urlsplit(mailbox).password is not None:
        raise InvalidInput("the store URL holds a password, which install would write into "
                           "the host's settings: give a URL without it and the password "
                           "through PGPASSFILE; nothing was changed")
    return mailbox


def _present_hooks(site: _Site) -> list[str]:
    """The ``mailslot hook`` command lines in the host's hooks file (none when it is
    absent or unreadable: then its own error comes when it is edited)."""
    spec = site.host.hook_file
    if spec is None:
        return []
    path = readable(site.where(spec.path[site.scope]), site.scope)  # a link loop: refused
    try:
        text = settings_files.read_text(path)
        doc = json.loads(text) if text else None
    except (MailslotError, ValueError):
        return []
    return list(entries.our_hook_commands(doc))


def _is_waiter(host: Host, command: str) -> bool:
    """Whether a hook command line is the host's background waiter (``hook HOST
    EVENT`` of :attr:`~mailslot.host_registry.host.Host.wake_hook`), which only ``install HOST
    --hooks --wake`` registers."""
    if host.wake_hook is None:
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    waiter = ["hook", host.name, host.wake_hook]
    return any(words[i:i + 3] == waiter for i in range(len(words)))


def _has_our_hooks(path: Path) -> bool:
    """Whether another host's settings file already runs ``mailslot hook``."""
    try:
        text = settings_files.read_text(path)
    except MailslotError:
        return False
    return text is not None and entries.runs_our_hook(text)


def _git_advice(project: Path, path: Path) -> str | None:
    ignored = settings_files.git_ignored(project, path)
    shown = path.relative_to(project) if path.is_relative_to(project) else path
    if ignored is None:
        return None
    if ignored:
        return f"{shown} holds paths on this machine; git already ignores it."
    return (f"{shown} holds paths on this machine: add it to .gitignore rather than "
            "committing it.")
