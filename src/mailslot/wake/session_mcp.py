"""A session's own mailslot MCP server, speaking as the agent it was started (or woken) as.

A folder's installed settings name the agent its sessions speak as (``mailslot install
HOST --agent A`` registers ``serve --agent A``), and ``--agent`` beats ``MAILSLOT_AGENT``.
So a session started with ``register_as NAME`` would speak as the folder's agent, not
as NAME, if it only got NAME in its environment. Instead each host is handed, for that
one session, a server called ``mailslot`` that runs ``serve --agent NAME``, by the
host's own per-session means (checked against each CLI's ``--help``, docs/launch.md):

* Claude Code: ``--mcp-config JSON`` (servers given there win over ``.mcp.json``'s);
* Codex: ``-c mcp_servers.mailslot.command=...`` and ``...args=[...]`` (config overrides
  for this run only);
* Copilot CLI: ``--additional-mcp-config JSON``;
* Gemini CLI: no per-session means (no flag; a private system settings file through
  ``GEMINI_CLI_SYSTEM_SETTINGS_PATH`` is skipped unless it and every folder above it
  belong to root, as measured with Gemini CLI 0.61.0). A Gemini session takes its name
  from ``MAILSLOT_AGENT``, which a ``mailslot serve`` registered without ``--agent``
  reads; :func:`gemini_conflict` finds a registration naming another agent, and the
  start is refused before anything runs.

The mailbox is passed as ``--dir`` when it is a folder; a server URL may hold a
password, so it is never an argument: the server reads it from ``MAILSLOT_STORE``,
which the session's environment carries (Codex passes only listed variables to its
servers, so it is listed with ``env_vars``).
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

SERVER = "mailslot"
HOSTS = ("claude", "codex", "copilot")
"""The hosts that take a per-session MCP server."""


@dataclass(frozen=True)
class Override:
    """What to add to one run of a host so its ``mailslot`` server speaks as the agent."""

    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)


def is_url(location: str) -> bool:
    return "://" in location


def store_env(location: str) -> dict[str, str]:
    """How a started or woken program is told which mailbox to use."""
    return {"MAILSLOT_STORE" if is_url(location) else "MAILSLOT_DIR": location}


def server_argv(agent: str, location: str) -> list[str]:
    """``mailslot serve --agent NAME [--dir FOLDER]`` of this installation."""
    beside = os.path.join(os.path.dirname(os.path.abspath(sys.executable)), "mailslot")
    program = [beside] if os.access(beside, os.X_OK) else [sys.executable, "-m", "mailslot"]
    tail = [] if is_url(location) else ["--dir", location]
    return [*program, "serve", "--agent", agent, *tail]


def override(host: str, agent: str, location: str) -> Override:
    """The per-session server for ``host`` (one of :data:`HOSTS`; others: nothing)."""
    command, *args = server_argv(agent, location)
    entry: dict[str, object] = {"command": command, "args": args}
    if host == "claude":
        return Override([f"--mcp-config={json.dumps({'mcpServers': {SERVER: entry}})}"])
    if host == "copilot":
        entry = {"type": "local", **entry, "tools": ["*"]}
        return Override([f"--additional-mcp-config={json.dumps({'mcpServers': {SERVER: entry}})}"])
    if host == "codex":
        key = f"mcp_servers.{SERVER}"
        found = [f"{key}.command={json.dumps(command)}", f"{key}.args={json.dumps(args)}"]
        if is_url(location):
            found.append(f'{key}.env_vars=["MAILSLOT_STORE"]')
        return Override([part for value in found for part in ("-c", value)])
    return Override()


def gemini_conflict(folder: str, agent: str) -> str | None:
    """Why a Gemini session in ``folder`` would not speak as ``agent`` (``None``: it
    would): a settings file Gemini reads there registers ``mailslot`` for another agent."""
    for path in (Path(folder) / ".gemini" / "settings.json",
                 Path.home() / ".gemini" / "settings.json"):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        servers = data.get("mcpServers") if isinstance(data, dict) else None
        entry = servers.get(SERVER) if isinstance(servers, dict) else None
        args = entry.get("args") if isinstance(entry, dict) else None
        words = [str(w) for w in args] if isinstance(args, list) else []
        bound = next((words[i + 1] for i, w in enumerate(words[:-1]) if w == "--agent"), None)
        if bound is not None and bound.lower() != agent:
            return (f"{path} registers mailslot as agent {bound!r}, and Gemini CLI has no "
                    f"per-session MCP settings, so the session would speak as {bound!r}, "
                    f"not {agent!r}: register it there without --agent (mailslot serve "
                    "then reads MAILSLOT_AGENT) or start another host")
    return None


def clean_environ() -> dict[str, str]:
    """This process's environment without any ``MAILSLOT_*`` variable: the caller's own
    identity, mailbox, credential or parent must never pass to a session it starts."""
    return {k: v for k, v in os.environ.items() if not k.startswith("MAILSLOT_")}
