"""Choosing an agent's wake: walk its host's ladder and take the first step whose probe
passes (``install HOST --wake``), or show every step's probe (``doctor --wake``).

A host declares its ladder (:attr:`~mailslot.host_registry.host.Host.wake_ladder`): wake methods
by name, best first, each with the oldest version of the host's program it is known to
work with. A step passes when the method exists, the waiter it needs is registered, the
program is found and its version is at least that one, and the method's own probe
(:meth:`~.methods.WakeMethod.check`) passes. Nothing here names a host: a host module
adds itself by declaring its ladder.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.config import Config
from ..core.errors import InvalidInput, StoreError
from .methods import Check, Setup
from .methods_by_name import find_method
from .process import find_program

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..host_registry.host import Host, Rung
    from ..store import Store

_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")
_VERSION_SECONDS = 10.0


@dataclass(frozen=True)
class Step:
    """One step of the ladder and its probe's answer."""

    method: str
    ok: bool
    said: str
    since: str | None = None
    fields: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"method": self.method, "ok": self.ok, "said": self.said,
                "since": self.since, "fields": dict(self.fields)}


@dataclass(frozen=True)
class Choice:
    """Every step of one host's ladder, probed, in order."""

    host: str
    title: str
    version: str | None  # of the host's program, as it printed it (None: not read)
    steps: tuple[Step, ...]
    unreachable: str  # why no wake is possible when the ladder is empty

    @property
    def chosen(self) -> Step | None:
        return next((s for s in self.steps if s.ok), None)

    def why_not(self) -> str:
        """One line: why no step passed."""
        if not self.steps:
            return f"{self.title} cannot be woken: {self.unreachable}"
        return (f"no wake is possible for {self.title} here: "
                + "; ".join(f"{s.method}: {s.said}" for s in self.steps))

    def as_dict(self) -> dict[str, Any]:
        chosen = self.chosen
        return {"host": self.host, "version": self.version,
                "chosen": chosen.method if chosen else None,
                "ladder": [s.as_dict() for s in self.steps],
                **({} if self.steps else {"unreachable": self.unreachable})}


def version_of(executable: str, args: tuple[str, ...]) -> str | None:
    """The first ``N.N[.N]`` the program prints for ``args`` (``None``: it printed none,
    failed, or took longer than 10 s). Run without a shell, stdin closed."""
    try:
        done = subprocess.run([executable, *args], stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=_VERSION_SECONDS, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    found = _VERSION.search((done.stdout or done.stderr).decode("utf-8", "replace"))
    return found.group(0) if found and done.returncode == 0 else None


def version_numbers(version: str) -> tuple[int, ...]:
    """``2.1.332`` as ``(2, 1, 332)`` (the first ``N.N[.N]`` in it; ``()``: none)."""
    found = _VERSION.search(version)
    return tuple(int(n) for n in found.groups() if n is not None) if found else ()


def probe(host: Host, setup: Setup) -> Choice:
    """Every step of ``host``'s ladder, probed (nothing is written or woken). The
    program's version is read once, and only when a step names a minimum."""
    version: str | None = None
    executable = find_program(host.program) if host.program else None
    if executable and any(r.since for r in host.wake_ladder):
        version = version_of(executable, host.version_args)
    steps = tuple(_step(host, rung, setup, executable, version) for rung in host.wake_ladder)
    return Choice(host.name, host.title, version, steps, host.unreachable)


def _step(host: Host, rung: Rung, setup: Setup, executable: str | None,
          version: str | None) -> Step:
    def step(check: Check, prefix: str = "") -> Step:
        return Step(rung.method, check.ok, prefix + check.said, rung.since, check.fields)

    method = find_method(rung.method)
    if method is None:
        return step(Check(False, "not a wake method of this mailslot"))
    if rung.waiter and (host.wake_hook is None or not setup.hooks):
        return step(Check(False, "needs --hooks: its background waiter is a hook"))
    prefix = ""
    if rung.since is not None:
        if executable is None:
            return step(Check(False, f"{host.program} is not on PATH"))
        if version is None:
            return step(Check(False, f"the version of {host.program} could not be read "
                                     f"(needs {rung.since} or later)"))
        if version_numbers(version) < version_numbers(rung.since):
            return step(Check(False, f"{host.title} {version} is older than {rung.since}"))
        prefix = f"{host.title} {version} (≥ {rung.since}); "
    return step(method.check(setup), prefix)


def setup_for(store: Store, entry: Mapping[str, Any], agent: str, host: Host, *,
              folder: str, hooks: bool, env: Mapping[str, str]) -> Setup:
    """The :class:`Setup` of ``agent`` in ``host`` (its latest session from the store)."""
    return Setup(agent, host.name, host.program, dict(entry), folder,
                 hooks and bool(host.events), store.latest_session(agent, host.name), env)


@dataclass(frozen=True)
class Diagnosis:
    """``doctor --wake``: the agent's configured wake, its probe, and the ladder."""

    agent: str
    opt_in: str
    method: str
    warnings: list[str]  # what the configured method's probe sees now
    choice: Choice

    @property
    def ok(self) -> bool:
        return not self.warnings and self.method not in ("", "none")

    def as_dict(self) -> dict[str, Any]:
        return {"agent": self.agent, "opt_in": self.opt_in, "method": self.method,
                "ok": self.ok, "warnings": self.warnings, **self.choice.as_dict()}


def diagnose(store: Store, raw_config: dict[str, Any], agent: str, host_name: str | None,
             env: Mapping[str, str], folder: str) -> Diagnosis:
    """Probe ``agent``'s configured wake again and every step of its host's ladder.
    Raises ``InvalidInput`` for an agent config.json does not list or a host that
    cannot be told, ``StoreError`` for a config error (naming the field)."""
    from .report import validate_agent

    config = Config(raw_config)
    entry = config.agents().get(agent)
    if entry is None:
        raise InvalidInput(f"config.json has no agent {agent!r} (install HOST --wake "
                           "chooses its wake)")
    report = validate_agent(store, raw_config, agent)
    if report.problems:
        raise StoreError(report.problems[0])
    host = _host_of(store, agent, report.method, host_name)
    sessions = [r for r in store.hook_sessions()
                if r.get("agent") == agent and r.get("host") == host.name]
    # a hook ran, a waiter waited, or install --hooks chose the waiter (it registered it)
    hooks = bool(sessions) or bool(store.waiter_pids(agent)) or (
        report.method in host.waiter_methods)
    setup = setup_for(store, entry, agent, host, folder=str(entry.get("cwd") or folder),
                      hooks=hooks, env=env)
    return Diagnosis(agent, report.opt_in, report.method, report.warnings,
                     probe(host, setup))


def _host_of(store: Store, agent: str, method: str, named: str | None) -> Host:
    """The host given, else the one whose own method is configured, else the host of
    the agent's latest hook session."""
    from .. import host_registry as hosts

    if named is not None:
        try:
            return hosts.host(named)
        except KeyError:
            raise InvalidInput(f"--host {named}: not a host (one of "
                               f"{', '.join(hosts.NAMES)})") from None
    for host in hosts.every():
        if any(getattr(m, "name", None) == method for m in host.wake_methods()):
            return host
    seen = sorted((r for r in store.hook_sessions() if r.get("agent") == agent
                   and r.get("host") in hosts.NAMES), key=lambda r: r.get("seen") or 0)
    if seen:
        return hosts.host(str(seen[-1]["host"]))
    raise InvalidInput(f"cannot tell which host {agent} runs in (its wake_method is "
                       f"{method or 'not set'} and no hook of it ran yet): give --host HOST")
