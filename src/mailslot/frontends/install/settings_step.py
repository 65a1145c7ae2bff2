"""The step that sets the agent's settings in the mailbox's config.json, and its undo.

What a registration implies there: the wake install chose (``--wake``, ``--channel``; only
the agent's own config allows a wake), or, for a registration without them, the stop of
a wake that only works with what they register (a channel, the background waiter); and
the agent's ask for the host's bridge (``--bridge``, or its absence: the host's page of
docs/, "The bridge"). The mailbox's own methods make each change under its lock, so the
change is known once made: the step records the agent's settings as they were before and
after (each key with the value it had, and whether the ask for the bridge was on), and
the mailbox as the registered commands name it, so that the undo finds it.

The undo puts back each key that still holds what install set (one changed since is
left, and named), takes back the bridge's ask if it is still as install left it, and
removes an agent entry install added once nothing is left in it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from ...service.mailbox import Mailbox
from . import taking_back
from .record import Record
from .steps import Undo, Written

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ...host_registry import Host


@dataclass(frozen=True)
class WakeAsk:
    """The wake this registration opts the agent in to."""

    method: str
    fields: Mapping[str, Any]
    why: str  # how it was chosen, said first


@dataclass(frozen=True)
class SettingsStep:
    """The agent's wake and bridge settings in config.json that this registration asks
    for (``wake``), or no longer works with (``stops``, when no wake is asked)."""

    host: Host
    agent: str
    mailbox_dir: str | None
    mailbox_word: str | None  # the mailbox as the commands name it (None: found by default)
    wake: WakeAsk | None
    stops: tuple[str, ...]
    bridge: bool

    @property
    def reads(self) -> str:
        return f"agents.{self.agent} in the mailbox's config.json"

    def dry_run(self) -> list[str]:
        return self._asked(dry_run=True)

    def check(self, log: Record) -> None:
        return None  # the wake was probed when the plan was made

    def keep(self, log: Record) -> list[str]:
        return []  # known once made: recorded by write

    def write(self, log: Record) -> Written:
        before = settings_of(self.host, self.agent, self.mailbox_dir)
        notes = self._asked(dry_run=False)
        after = settings_of(self.host, self.agent, self.mailbox_dir)
        log["mailbox"] = self.mailbox_word or after[2]
        return Written(notes, _record(log, before[0], after[0], (before[1], after[1])))

    def _asked(self, *, dry_run: bool) -> list[str]:
        if self.wake is not None:
            said = [_choose_wake(self.host, self.agent, self.wake, self.mailbox_dir, dry_run)]
        else:
            said = _drop_wake(self.agent, self.stops, self.mailbox_dir, dry_run)
        return said + bridge_ask(self.host, self.agent, self.bridge, self.mailbox_dir, dry_run)


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


def _record(log: Record, before: Mapping[str, Any] | None,
            after: Mapping[str, Any] | None, bridge: tuple[bool, bool]) -> bool:
    """Record the agent's settings as they were ``before`` and ``after`` one run
    (``None``: no entry), and whether its ask for the host's bridge was on; whether the
    run changed any."""
    settings = log["settings"]
    settings.setdefault("existed", before is not None)
    keys = taking_back.flat_changes(before or {}, after or {}, leave=("bridge",))
    settings["keys"] = taking_back.merged(settings.get("keys", []), keys)
    first = settings.pop("bridge", None)
    start = first[0] if first is not None and first[1] == bridge[0] else bridge[0]
    if start != bridge[1]:
        settings["bridge"] = [start, bridge[1]]
    return bool(keys) or bridge[0] != bridge[1]


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


def _drop_wake(agent: str, installed: tuple[str, ...], mailbox_dir: str | None,
               dry_run: bool) -> list[str]:
    """A registration without --wake/--channel no longer wakes: say so in config.json
    (the wake methods that only work with what those flags register)."""
    if not installed:
        return []
    box = Mailbox.open(mailbox_dir, agent)
    where = f"{box.store.location}/config.json"
    setting = f'agents.{agent}.wake_method "unsupported" (wake_on_mail false)'
    if dry_run:
        return ([f"would set {setting} in {where}"]
                if box.wake_method(agent) in installed else [])
    if box.stop_wake(agent, installed):
        return [f"set {setting} in {where}: this registration has no waiter or channel"]
    return []


def _choose_wake(host: Host, agent: str, wake: WakeAsk, mailbox_dir: str | None,
                 dry_run: bool) -> str:
    """Opt the agent in to the wake's method (and its fields) in the mailbox's
    config.json (only the agent's own config allows a wake)."""
    box = Mailbox.open(mailbox_dir, agent)
    named = "".join(f", {k}" for k in wake.fields)
    setting = f'agents.{agent}.wake_method "{wake.method}" with wake_on_mail{named}'
    where = f"{box.store.location}/config.json"
    if dry_run:
        return f"{wake.why}; would set {setting} in {where}"
    changed = box.choose_wake(agent, wake.method, wake.fields)
    said = f"{wake.why}; {'set' if changed else 'kept'} {setting} in {where}"
    advice = host.install_advice(wake.method)
    return f"{said}; {advice}" if advice else said


def recorded(host: Host, log: Record) -> list[Undo]:
    """The undo of the agent's settings in ``log`` (none when install set none)."""
    settings, agent = log["settings"], log.get("agent")
    if agent is None or (not settings.get("keys") and settings.get("bridge") is None):
        return []
    return [partial(_put_back, host, agent, log)]


def _put_back(host: Host, agent: str, log: Record) -> list[str]:
    """The agent's settings in the mailbox put back as they were before the install."""
    settings, mailbox = log["settings"], log.get("mailbox")
    keys, bridge = settings.get("keys", []), settings.get("bridge")
    box = Mailbox.open(mailbox, agent)
    where = f"{box.store.location}/config.json"
    if not box.store.exists():
        return [f"the mailbox {box.store.location} is gone: its settings left as they are"]
    said = []
    if bridge is not None and settings_of(host, agent, mailbox)[1] == bridge[1]:
        said += bridge_ask(host, agent, bridge[0], mailbox)
    if keys or not settings.get("existed", True):
        back, left = box.put_back_settings(
            agent, [{"key": op["path"][0], **{k: op[k] for k in ("before", "after") if k in op}}
                    for op in keys], drop_empty=not settings.get("existed", True))
        if back:
            said.append(f"put back agents.{agent}'s {', '.join(back)} in {where} as before "
                        "install")
        if left:
            said.append(f"left agents.{agent}'s {', '.join(left)} in {where} as they are: "
                        "changed since install")
    return said
