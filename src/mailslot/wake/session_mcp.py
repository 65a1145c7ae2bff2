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
* Gemini CLI: no flag, so ``GEMINI_CLI_SYSTEM_SETTINGS_PATH`` names a private copy of
  the system settings (kept whole: an administrator's settings still apply) with the
  ``mailslot`` server added; system settings override the user's and the project's.

The mailbox is passed as ``--dir`` when it is a folder; a server URL may hold a
password, so it is never an argument: the server reads it from ``MAILSLOT_STORE``,
which the session's environment carries (Codex passes only listed variables to its
servers, so it is listed with ``env_vars``).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

SERVER = "mailslot"
GEMINI_SYSTEM_ENV = "GEMINI_CLI_SYSTEM_SETTINGS_PATH"
_GEMINI_SYSTEM = {"linux": "/etc/gemini-cli/settings.json",
                  "darwin": "/Library/Application Support/GeminiCli/settings.json",
                  "win32": r"C:\ProgramData\gemini-cli\settings.json"}
HOSTS = ("claude", "codex", "gemini", "copilot")


class SettingsError(Exception):
    """The host's own settings cannot be carried over (the start or wake fails)."""


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


def override(host: str, agent: str, location: str, *, write: bool = True) -> Override:
    """The per-session server for ``host`` (one of :data:`HOSTS`); ``write=False`` (a
    preview) names Gemini's private settings file without writing it."""
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
    if host == "gemini":
        return Override(env={GEMINI_SYSTEM_ENV: str(_gemini_settings(agent, entry, write))})
    raise ValueError(f"no per-session MCP server for {host}")


def _gemini_settings(agent: str, entry: dict[str, object], write: bool = True) -> Path:
    """Write the private system settings for one Gemini run; returns its path."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    folder = cache / "mailslot" / "sessions"
    path = folder / f"gemini-{agent}.json"
    if not write:
        return path
    given = os.environ.get(GEMINI_SYSTEM_ENV)
    system = Path(given or _GEMINI_SYSTEM.get(sys.platform, _GEMINI_SYSTEM["linux"]))
    settings: dict[str, object] = {}
    if system.exists():
        try:
            loaded = json.loads(system.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            loaded = None
        if not isinstance(loaded, dict):
            raise SettingsError(f"Gemini's system settings {system} cannot be read as a "
                                "JSON object; they would be lost, so nothing was started")
        settings = loaded
    servers = settings.get("mcpServers")
    settings["mcpServers"] = {**(servers if isinstance(servers, dict) else {}), SERVER: entry}
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(folder, 0o700)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".gemini-", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(settings, out, indent=2)
    os.replace(tmp, path)
    return path


def clean_environ() -> dict[str, str]:
    """This process's environment without any ``MAILSLOT_*`` variable: the caller's own
    identity, mailbox, credential or parent must never pass to a session it starts."""
    return {k: v for k, v in os.environ.items() if not k.startswith("MAILSLOT_")}
