"""Plan, check and write the changes of one ``mailslot install`` (see the package)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from urllib.parse import urlsplit

from ... import host_registry as hosts
from ...core.errors import InvalidInput, MailslotError
from ...core.values import dataclass, field
from ...service.mailbox import Mailbox
from ..http.client import SECRET_ENV
from . import entries, record, settings_files
from .places import checked_real, place_of, project_of, readable
from .remote_entries import LOCAL_KEYS, REMOTE_KEYS, is_remote_hook, remote_entry

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ...host_registry import Host
    from ...host_registry.host import Scope
    from ...wake.choice import Step


@dataclass(frozen=True)
class Change:
    """One settings file: its text before (``None``: no file yet) and after."""

    path: Path
    before: str | None
    after: str
    in_project: bool
    real: Path  # where the path leads (links followed): what is really written
    kind: str = "json"  # or "toml", or "text": a file of mailslot's own, written whole

    @property
    def changed(self) -> bool:
        return self.before != self.after

    @property
    def shown(self) -> str:
        """The path, and the file it really is when a link leads elsewhere."""
        return str(self.path) if self.real == self.path else f"{self.path} -> {self.real}"

    def diff(self) -> str:
        return settings_files.diff(self.path, self.before, self.after)


@dataclass(frozen=True)
class Report:
    host: Host
    scope: Scope
    agent: str
    changes: list[Change]
    notes: list[str] = field(default_factory=list)
    dry_run: bool = False
    warnings: list[str] = field(default_factory=list)
    quiet: bool = False  # a run that changed nothing: notes shown before are left out


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


def install(
    host_name: str,
    agent: str,
    *,
    scope: Scope | None = None,
    hooks: bool = False,
    wake: bool = False,
    channel: bool = False,
    sidecar: bool = False,
    bridge: bool = False,
    dry_run: bool = False,
    mailbox_dir: str | None = None,
    executable: str | None = None,
    home: Path | None = None,
    cwd: Path | None = None,
    allow_outside: Sequence[str] = (),
    credential: str | None = None,
    remote: str | None = None,
) -> Report:
    """Plan every change, refuse before writing anything if one is wrong, then write,
    and record what was done (:mod:`mailslot.frontends.install.record`) for ``install --undo``.

    A project file that is (or sits in a folder that is) a link is refused unless its
    real path is in ``allow_outside`` (:func:`checked_real`): a cloned repository must
    not make ``install`` rewrite the user's own settings elsewhere.
    """
    host = hosts.host(host_name)

    def offered() -> str:  # asked only to say so: it loads every host
        return hosts.listed(hosts.names(lambda h: "channel" in h.install_wakes))

    if channel and "channel" not in host.install_wakes:
        raise InvalidInput(f"--channel works only for {offered()} (a channel into the "
                           "session)")
    if wake and channel:
        raise InvalidInput(f"choose one way to wake {host.title}: --wake or --channel")
    if sidecar and not host.sidecar:
        raise InvalidInput("--sidecar works only for "
                           + hosts.listed(hosts.names(lambda h: h.sidecar)))
    if sidecar and remote is not None:
        raise InvalidInput("--sidecar writes into a mailbox on this machine; not with --remote")
    if bridge and host.bridge() is None:
        raise InvalidInput("--bridge works only for "
                           + hosts.listed(hosts.names(lambda h: h.bridge() is not None)))
    if bridge and remote is not None:
        raise InvalidInput("--bridge runs beside the mailbox on this machine; not with "
                           "--remote")
    if hooks and host.hook_file is None and host.mcp_format != "extension":
        raise InvalidInput(f"{host.title} has no documented hook that can show mail; install it "
                           "without --hooks (its agents use the MCP tools)")
    scope = scope or host.default_scope
    home = home or Path.home()
    project = project_of(cwd)
    exe = executable or find_executable()
    tail = ["--agent", agent]
    if mailbox_dir:
        tail += ["--dir", _mailbox_word(mailbox_dir)]

    def where(rel: str) -> Path:
        return home / rel[2:] if rel.startswith("~/") else project / rel

    named = {Path(p).expanduser().resolve() for p in allow_outside}

    def inside(path: Path) -> Path:
        """Where ``path`` really leads (see :func:`checked_real`)."""
        return checked_real(path, project if scope == "project" else None, named)

    spec = host.hook_file
    present = _our_hooks(readable(where(spec.path[scope]), scope)) if spec is not None else []
    chosen = _choose(host, agent, mailbox_dir, str(project), hooks or bool(present)) \
        if wake and remote is None else None
    waiter = chosen is not None and chosen.method in host.waiter_methods
    plan: dict[Path, list[settings_files.Editor]] = {}
    yours: set[Path] = set()  # files in your home whatever the scope (a sidecar's)
    changes = []
    mcp_path = where(host.mcp_path[scope])
    if host.mcp_format == "extension":  # one file of mailslot's own, written whole
        real = inside(mcp_path)
        before = settings_files.read_text(real)
        if before is not None:
            entries.same_agent(host.extension_agent(before, str(mcp_path)), agent,
                               str(mcp_path))
        whole = host.extension(exe, tail, agent, hooks=hooks, wake=waiter)
        changes.append(Change(mcp_path, before, whole, scope == "project", real, "text"))
    else:
        serve = ["serve", "--channel"] if channel else ["serve"]
        server_tail = tail
        if credential is not None:  # the server's identity comes from the credential
            serve += ["--credential", str(Path(credential).expanduser().absolute())]
            server_tail = tail[2:]
        fields = host.server_entry(exe, [*serve, *server_tail])
        plan[mcp_path] = [partial(entries.set_server, container=host.mcp_container,
                                  fields=fields, agent=agent, where=str(mcp_path),
                                  drop=REMOTE_KEYS)]
    if remote is not None:  # the host reaches `serve --http` at remote
        if wake or channel:
            raise InvalidInput("--wake and --channel need the mailbox on this machine; "
                               "not with --remote")
        plan[mcp_path] = [partial(entries.set_server, container=host.mcp_container,
                                  fields=remote_entry(host, remote), agent=agent,
                                  where=str(mcp_path), drop=LOCAL_KEYS)]
        tail = ["--remote", remote]
        if credential is not None:
            tail += ["--credential", str(Path(credential).expanduser().absolute())]
    if sidecar:
        folder = Mailbox.open(mailbox_dir, agent).store.folder
        if folder is None:
            raise InvalidInput("--sidecar needs a mailbox folder (the sidecar writes into "
                               "it); nothing was changed")
        for rel, define in host.sidecar_entries(exe, ["sidecar", host.name, "--dir", folder]):
            plan.setdefault(where(rel), []).append(define)
            yours.add(where(rel))
    notes = list(host.install_notes.get(scope, ()))
    if not hooks and any(is_remote_hook(c) != (remote is not None) for c in present):
        hooks = True  # they follow the server entry: never left reaching the old place
        notes.append("mailslot's hooks there were " + ("local" if remote else "remote")
                     + " ones: switched to " + ("remote" if remote else "local") + " too")
    if not hooks and not waiter and any(_is_waiter(host, c) for c in present):
        hooks = True  # a waiter this registration does not wake with would wait for nothing
        notes.append("mailslot's hooks there had the background waiter (--wake): rewritten "
                     "without it, as this registration does not wake with it")
    if hooks and spec is not None:
        hook_path = where(spec.path[scope])

        def command(event: str) -> str:
            return shlex.join([exe, "hook", host.name, event, *tail])

        plan.setdefault(hook_path, []).append(partial(
            entries.set_hooks, host=host, command=command, agent=agent, where=str(hook_path),
            wake=command(host.wake_hook) if waiter and host.wake_hook else None))
        notes += spec.notes
        if host.also_runs is not None:
            other, files = host.also_runs
            notes += [f"{host.title} also runs {hosts.host(other).title}'s hooks in {p}: mail "
                      "may be shown twice there; keep one of the two." for rel in files
                      if _has_our_hooks(p := where(rel))]
    for path, editors in plan.items():
        real = checked_real(path) if path in yours else inside(path)
        text = settings_files.read_text(real)
        kind = "toml" if path == mcp_path and host.mcp_format == "toml" else "json"
        changes.append(Change(path, text, settings_files.edit_doc(kind, path, text, editors),
                              scope == "project" and path not in yours, real, kind))
    notes += [n for c in changes if c.in_project and (n := _git_advice(project, c.path))]
    place = place_of(scope, home, cwd)
    log = None if dry_run else record.write_changes(host.name, scope, place, agent,
                                                        changes, notes)
    warnings = _speaks_as_another(host, project, agent)
    registered = _registered_wakes(host)
    touches = remote is None and bool(chosen or channel or registered or host.bridge())
    settings = settings_of(host, agent, mailbox_dir) if touches and not dry_run else None
    if remote is not None:
        notes.append(f"{host.title} reads the secret from ${SECRET_ENV}: export it from "
                     "the credential file in the agent's environment (docs/remote.md)")
    elif chosen is not None:
        notes.append(_choose_wake(host, agent, chosen.method, chosen.fields, mailbox_dir,
                                  dry_run, f"wake: {chosen.method}, chosen: {chosen.said}"))
    elif channel:
        notes.append(_choose_wake(host, agent, host.install_wakes["channel"], {},
                                  mailbox_dir, dry_run, "wake: channel"))
    elif registered:
        notes += _drop_wake(host, agent, registered, mailbox_dir, dry_run)
    if remote is None:
        notes += bridge_ask(host, agent, bridge, mailbox_dir, dry_run)
    if log is None:
        return Report(host, scope, agent, changes, notes, dry_run, warnings)
    changed = any(c.changed for c in changes)
    if settings is not None:
        after = settings_of(host, agent, mailbox_dir)
        log["mailbox"] = _mailbox_word(mailbox_dir) if mailbox_dir else after[2]
        changed = record.settings_changed(log, settings[0], after[0],
                                          (settings[1], after[1])) or changed
    shown = set(log["notes"])
    log["notes"] += [n for n in dict.fromkeys(notes) if n not in shown]
    record.save(record.where(host.name, scope, place), log, unless_same=True)
    if not changed:  # one line: only what was never shown here
        notes = [n for n in notes if n not in shown]
    return Report(host, scope, agent, changes, notes, dry_run, warnings, quiet=not changed)


def settings_of(host: Host, agent: str, mailbox_dir: str | None
                ) -> tuple[dict[str, Any] | None, bool, str | None]:
    """The agent's settings in the mailbox's config, whether it asks for the host's
    bridge (what the record compares before and after), and the mailbox's folder
    (``None`` for a database: the undo finds it as install did, its password never in
    the record)."""
    box = Mailbox.open(mailbox_dir, agent)
    agents = box.store.load_config().get("agents")
    entry = agents.get(agent) if isinstance(agents, dict) else None
    mine = json.loads(json.dumps(entry)) if isinstance(entry, dict) else None
    return mine, mine is not None and mine.get("bridge") == host.name, box.store.folder


def bridge_ask(host: Host, agent: str, on: bool, mailbox_dir: str | None,
               dry_run: bool = False) -> list[str]:
    """``--bridge``: the host's bridge on for ``agent`` (config.json); a registration
    without it, or ``install --undo``, takes the agent's ask back, and the last ask
    taken back turns the bridge off (the host's page of docs/, "The bridge")."""
    if host.bridge() is None:
        return []
    box = Mailbox.open(mailbox_dir, agent)
    said = box.ask_bridge(agent, host.name, on, dry_run=dry_run)
    where = f"{box.store.location}/config.json"
    if not said:
        return [f"bridge: kept agents.{agent}.bridge \"{host.name}\" and bridges in {where}"] \
            if on else []
    verb = ("would set" if on else "would remove") if dry_run else ("set" if on else "removed")
    line = f"bridge: {verb} {said} in {where}"
    if on:
        line += (f"; the watcher runs `mailslot bridge {host.name}` (started on demand by "
                 "the hooks, or `mailslot watch`)")
    return [line]


def _choose(host: Host, agent: str, mailbox_dir: str | None, project: str,
            hooks: bool) -> Step:
    """``--wake``: the first step of the host's ladder whose probe passes; refused in
    one line, before anything is written, when none does."""
    from ...wake.choice import probe, setup_for

    box = Mailbox.open(mailbox_dir, agent)
    setup = setup_for(box.store, box.config.agents().get(agent, {}), agent, host,
                      folder=project, hooks=hooks, env=os.environ)
    choice = probe(host, setup)
    if choice.chosen is None:
        raise InvalidInput(f"{choice.why_not()}; nothing was changed"
                           + ("" if choice.steps else " (install it without --wake)"))
    return choice.chosen


def _registered_wakes(host: Host) -> tuple[str, ...]:
    """The wake methods that work only with what an install registers (a channel, the
    background waiter): a registration without them stops such a wake."""
    return (*host.install_wakes.values(), *host.waiter_methods)


def _drop_wake(host: Host, agent: str, installed: tuple[str, ...], mailbox_dir: str | None,
               dry_run: bool) -> list[str]:
    """A registration without --wake/--channel no longer wakes: say so in config.json
    (the wake methods that only work with what those flags register)."""
    box = Mailbox.open(mailbox_dir, agent)
    where = f"{box.store.location}/config.json"
    setting = f'agents.{agent}.wake_method "unsupported" (wake_on_mail false)'
    if dry_run:
        return ([f"would set {setting} in {where}"]
                if box.wake_method(agent) in installed else [])
    if box.stop_wake(agent, installed):
        return [f"set {setting} in {where}: this registration has no waiter or channel"]
    return []


def _choose_wake(host: Host, agent: str, method: str, fields: Mapping[str, Any],
                 mailbox_dir: str | None, dry_run: bool, why: str) -> str:
    """Opt the agent in to ``method`` (and its ``fields``) in the mailbox's config.json
    (only the agent's own config allows a wake)."""
    box = Mailbox.open(mailbox_dir, agent)
    named = "".join(f", {k}" for k in fields)
    setting = f'agents.{agent}.wake_method "{method}" with wake_on_mail{named}'
    where = f"{box.store.location}/config.json"
    if dry_run:
        return f"{why}; would set {setting} in {where}"
    changed = box.choose_wake(agent, method, fields)
    said = f"{why}; {'set' if changed else 'kept'} {setting} in {where}"
    advice = host.install_advice(method)
    return f"{said}; {advice}" if advice else said


def _speaks_as_another(host: Host, project: Path, agent: str) -> list[str]:
    """Warnings for project files of other hosts that would make this one act as
    another agent (:attr:`~mailslot.host_registry.host.Host.also_reads`)."""
    out = []
    for rel in host.also_reads:
        path = project / rel
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


def _mailbox_word(mailbox: str) -> str:
    """The mailbox as the registered commands name it: a folder by its absolute path, a
    store URL as it is (made a path it would name a folder of this one). A password in
    the URL is refused: the settings files are not the place for it."""
    if "://" not in mailbox:
        return str(Path(mailbox).expanduser().absolute())
    if urlsplit(mailbox).password is not None:
        raise InvalidInput("the store URL holds a password, which install would write into "
                           "the host's settings: give a URL without it and the password "
                           "through PGPASSFILE; nothing was changed")
    return mailbox


def _our_hooks(path: Path) -> list[str]:
    """The ``mailslot hook`` command lines in the hooks file at ``path`` (none when it is
    absent or unreadable: then its own error comes when it is edited)."""
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
