"""``mailslot doctor``: whether the mailbox is healthy (permissions, config, wake
settings, the watcher, leftovers; with ``deep`` every stored file and message) and, with
``fix``, repairing what is safe to. Reached through
:meth:`~mailslot.service.mailbox.Mailbox.doctor`.
"""

from __future__ import annotations

import os

from ..core.config import Config
from ..core.errors import MailslotError, UnsafePath
from ..core.results import DoctorReport, WatcherInfo
from .overview import watcher

TYPE_CHECKING = False  # typing is not loaded on the CLI path
if TYPE_CHECKING:
    from ..store import Store

STALE_STAGING_SECONDS = 36 * 3600


def doctor(store: Store, *, fix: bool = False, deep: bool = False) -> DoctorReport:
    """Check permissions, config, wake settings and leftovers; with ``deep`` (or ``fix``)
    also every stored file and every message; with ``fix``, repair what is safe to and
    move unreadable messages to the quarantine folder (nothing is ever deleted but stale
    staging files). Without ``deep`` the check is bounded by open mail, not history
    (:meth:`~mailslot.store.base.Store.problems`), and the report says so.
    """
    deep = deep or fix
    fixed = _repair(store) if fix else []
    problems = store.problems(deep=deep)
    watching: WatcherInfo | None = None
    try:
        config = Config(store.load_config())
        problems.extend(config.problems())
    except MailslotError as exc:  # an unreadable config is a finding, not a crash
        problems.append(str(exc))
    else:
        watching = _watcher_checked(store, config, problems)
    if watching is not None and watching.wanted and not watching.running \
            and not watching.on_demand:
        problems.append(f"watcher: {watching.describe()}")
    wake_problems, routes = _wakes(store)
    problems.extend(wake_problems)
    if deep:
        problems.extend(_unreadable(store, fix, fixed))
    _stale_staging(store, fix, problems, fixed)
    return DoctorReport(store.location, problems, fixed, watching, deep=deep,
                        bridges=_bridges(store), routes=routes, kind=store.kind)


def _repair(store: Store) -> list[str]:
    """``doctor --fix``'s first steps, before anything is checked: permissions tightened
    and the kept counts counted again. Returns what was done."""
    fixed: list[str] = []
    changed = store.fix_permissions()
    if changed:
        fixed.append(f"tightened permissions on {changed} path(s)")
    try:
        recounted = store.repair_counts()
    except MailslotError:  # a planted folder: problems() names it below
        recounted = 0
    if recounted:
        fixed.append(f"counted {recounted} mailbox tally(s) again")
    return fixed


def _stale_staging(store: Store, fix: bool, problems: list[str], fixed: list[str]) -> None:
    """Staging files a crashed writer left: a problem, or (``fix``) removed."""
    try:
        staged = store.staging()
    except MailslotError as exc:  # tmp/ itself planted or unusable: a finding too
        problems.append(str(exc))
        staged = []
    stale = [s for s in staged if s.age_seconds > STALE_STAGING_SECONDS]
    if stale and fix:
        removed = 0
        for item in stale:
            try:
                store.remove_staging(item)
                removed += 1
            except MailslotError as exc:  # swapped for a folder meanwhile, or locked
                problems.append(str(exc))
        if removed:
            fixed.append(f"removed {removed} staging file(s) older than 36 hours")
    elif stale:
        problems.append(
            f"{len(stale)} staging file(s) older than 36 hours (left by a crashed writer;"
            " `mailslot doctor --fix` removes them)"
        )


def _bridges(store: Store) -> tuple[str, ...]:
    """Each host whose bridge config.json asks for or that runs: the agents it lists
    now (read from the host's registry: a bridge's records name this mailbox)."""
    from .. import host_registry as hosts

    try:
        raw = store.load_config().get("bridges")
    except MailslotError:
        raw = None
    asked = set(raw) if isinstance(raw, list) else set()
    lines = []
    for host in map(hosts.host, hosts.BRIDGED):
        shapes = host.bridge()
        running = shapes.bridges(store.location, os.environ)
        if running:
            listed = ", ".join(f"{agent} (pid {pid})" for agent, pid in sorted(running))
            lines.append(f"{host.name}: runs, listing {listed}")
        elif host.name in asked:
            lines.append(f"{host.name}: asked for in config.json (bridges), not running "
                         "(the watcher runs it: mailslot watch)")
    return tuple(lines)


def _wakes(store: Store) -> tuple[list[str], tuple[str, ...]]:
    """What ``watch --validate`` rejects, so ``doctor`` never says ok over it, and which
    way each woken agent's wake would go now (a method that picks at wake time)."""
    from ..wake.report import validate  # only doctor needs it here

    report = validate(store)  # its config-wide problems are the config's, reported above
    return ([f"wake: {a.agent}: {p}" for a in report.agents for p in a.problems],
            tuple(f"{a.agent} ({a.method}): {a.route}" for a in report.agents if a.route))


def _unreadable(store: Store, fix: bool, fixed: list[str]) -> list[str]:
    """Unreadable messages, each named; with ``fix``, moved to the quarantine folder."""
    problems: list[str] = []
    moved = 0
    for agent, message_id, why in store.unreadable():
        if not fix:
            problems.append(f"{why} (`mailslot doctor --fix` moves it to quarantine)")
            continue
        try:
            store.quarantine(agent, message_id)
            moved += 1
        except MailslotError as exc:
            problems.append(f"{why}; not moved: {exc}")
    if moved:
        fixed.append(f"moved {moved} unreadable message(s) to the quarantine folder")
    return problems


def _watcher_checked(store: Store, config: Config, problems: list[str]) -> WatcherInfo | None:
    """:func:`watcher`, with what is planted where the watcher's folder, lock, record or
    log should be added to ``problems`` (the file store's own check names what is in
    its folder; a store that is no folder keeps them under the state folder)."""
    from ..mail import watchers

    if store.folder is None:
        problems.extend(watchers.problems(store))
    try:
        return watcher(store, config)
    except UnsafePath:  # a planted folder or lock: named among the problems already
        return None
