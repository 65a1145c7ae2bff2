"""Recovery: start an agent again when mail arrives and all its sessions are gone.

Only for an agent whose own config opted in with a ``restart`` recipe::

    "builder": {"wake_on_mail": true, "wake_method": "tmux", "tmux_target": "%3",
                "tmux_program": "HOST",
                "restart": {"host": "HOST", "folder": "/home/sarah/src/app",
                            "continue": true, "handoff": "tmux"}}

Gone means: no mailslot server of the agent is online and its tmux pane no longer
exists. Then the watcher continues the host's latest session in that folder (its
continue command) in a new window of the ``mailslot`` tmux session, points the agent's
``tmux_target`` at it, logs the start in the session log, and wakes it as usual. The
owner's ``launch.<host>`` guardrails apply (default model and permission mode, checked).
A failed start is a failed wake attempt, retried once
(:data:`~mailslot.wake.runner.RESTART_ATTEMPTS`, with the wake
backoff, fewer if ``wake_retry.attempts`` is 1); when the second start fails too the
sender is told, as for any wake that is given up. Once started, the pane exists, so a second
arrival wakes that session instead of starting another.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from typing import Any

from .. import host_registry as hosts
from ..core.config import Config
from ..core.errors import MailslotError, StoreError
from ..host_registry.host import Failed
from ..mail.posting import now
from ..mail.presence import now_of, summarize
from ..store import Store
from ..wake import environment, session_mcp
from ..wake.methods import OK, Outcome, bypass_flag, where
from ..wake.tmux import TmuxMethod
from .guardrails import Guardrails, open_window


def _recipe(agent: str, fields: Mapping[str, Any]) -> dict[str, Any] | None:
    recipe = fields.get("restart")
    if recipe is None:
        return None
    able = hosts.names(lambda h: h.startable and h.continues)
    if not isinstance(recipe, dict) or recipe.get("host") not in able:
        raise StoreError(f"{where(agent, 'restart')} must be an object with host "
                         f"{hosts.listed(able)}")
    folder = recipe.get("folder")
    if not isinstance(folder, str) or not os.path.isabs(folder):
        raise StoreError(f"{where(agent, 'restart')}.folder must be an absolute path")
    if recipe.get("continue", True) is not True or recipe.get("handoff", "tmux") != "tmux":
        raise StoreError(f"{where(agent, 'restart')}: only continue: true with handoff "
                         "tmux is supported")
    if fields.get("wake_method") != "tmux":
        raise StoreError(f"{where(agent, 'restart')} needs wake_method \"tmux\"")
    return recipe


def _pane_exists(server: list[str], target: object) -> bool:
    if not isinstance(target, str):
        return False
    try:
        done = subprocess.run(["tmux", *server, "display-message", "-p", "-t", target,
                               "#{pane_id}"], capture_output=True, text=True, timeout=10,
                              check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False  # no tmux to ask: starting it again fails, and says why
    return done.returncode == 0 and done.stdout.strip().startswith("%")


def recover(store: Store, agent: str, fields: Mapping[str, Any]) -> Outcome | None:
    """``None``: nothing to start (no recipe, or a session is alive); else how starting
    the agent again went."""
    try:
        recipe = _recipe(agent, fields)
        if recipe is None:
            return None
        server = TmuxMethod.from_config(agent, fields).server  # the pane's, as woken
        online = summarize(store.presence(), now_of(store)).get(agent)
        if (online is not None and online.online) or _pane_exists(server, fields.get(
                "tmux_target")):
            return None
        config = Config(store.load_config())
        host = hosts.host(recipe["host"])
        rails = Guardrails(config.launch(), host)
        mode = rails.permission_mode(None)
        own = session_mcp.override(host.name, agent, store.location)
        argv = [*host.continue_argv(rails.executable(), mode), *own.args]
        flag = bypass_flag(argv, recipe["folder"])
        if flag is not None and mode not in host.bypass:
            return Outcome(False, f"restart refused: {flag}", retry=False)
        env = {**environment.identity(agent, store.location), **own.env}
        target, pid = open_window(server, argv, env, recipe["folder"], agent)
    except Failed as exc:
        return Outcome(False, f"could not start {agent} again: {exc}", restart=True)
    except MailslotError as exc:
        return Outcome(False, f"could not start {agent} again: {exc}", retry=False)

    def point(raw: dict[str, Any]) -> bool:
        raw["agents"][agent]["tmux_target"] = target
        return True

    store.update_config(point)
    store.log_session({"ts": now().isoformat(), "launcher": host.name, "from": "mailslot",
                       "via": "watch", "folder": recipe["folder"], "name": agent,
                       "model": None, "effort": None, "permission_mode": mode,
                       "handoff": "tmux", "outcome": "handed_off", "session_id": None,
                       "project": None, "register_as": agent, "pid": pid,
                       "tmux_target": target, "error": None, "prompt": None})
    return OK
