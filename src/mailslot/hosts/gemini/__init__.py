"""Gemini CLI (``@google/gemini-cli``): everything mailslot knows about it.

Sources: Gemini CLI's configuration and hooks references (geminicli.com/docs), checked
against the real program offline (docs/hosts.md). Its lifecycle hook matchers are compared
as exact strings (``"startup|resume"`` matches nothing), so its hooks carry no matcher;
it wraps hook text in ``<hook_context>`` and counts hook timeouts in milliseconds.
"""

from __future__ import annotations

import os

from ...core import jsontext
from ...core.durable import read_file
from ...core.errors import UnsafePath
from ...host_registry.host import (
    MIDTURN,
    PROMPT,
    SERVER,
    START,
    STOP,
    Hook,
    HookFile,
    Host,
    Rung,
    Start,
    context,
    decision,
    option,
)
from ...host_registry.session_record import transcript_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


class Gemini(Host):
    name = "gemini"
    title = "Gemini CLI"
    program_env = ("GEMINI_*", "GOOGLE_*")
    markers = ("GEMINI_CLI", "GEMINI_CLI_NO_RELAUNCH", "GEMINI_PROJECT_DIR")
    package = "@google/gemini-cli"
    runtime = "gemini-cli"

    mcp_path = {"project": ".gemini/settings.json", "user": "~/.gemini/settings.json"}
    hook_file = HookFile(
        {"project": ".gemini/settings.json", "user": "~/.gemini/settings.json"},
        (Hook("SessionStart", "session-start"), Hook("BeforeAgent", "before-agent"),
         Hook("AfterAgent", "after-agent"), Hook("AfterTool", "after-tool")),
        10_000, named=True, notes=(
            "Gemini CLI runs hooks when hooksConfig.enabled is on (the default in current "
            "versions; older ones need tools.enableHooks).",
        ))
    install_notes = {"project": ("Gemini CLI reads project settings only in trusted folders.",)}

    events = {"session-start": START, "before-agent": PROMPT, "after-agent": STOP,
              "after-tool": MIDTURN}
    outputs = {START: context("SessionStart"), PROMPT: context("BeforeAgent"),
               STOP: decision("deny"), MIDTURN: context("AfterTool")}
    tool_names = "mcp_mailslot_{}"  # what its policy rules name too
    record_holds = frozenset({START, PROMPT, MIDTURN, "tool"})
    given_markers = (b'"type":"user"',)
    answer_markers = (b'"type":"gemini"',)

    wake_ladder = (Rung("tmux"), Rung("gemini"), Rung("command"))
    """No way into a live session but its pane; else a separate headless turn."""

    program = "gemini"
    startable = True
    modes = ("default", "plan", "auto_edit", "yolo")  # its --approval-mode values
    default_allowed = ("default", "plan")
    bypass = frozenset({"auto_edit", "yolo"})
    default_mode = "default"
    session_ids = True
    wake_method = "gemini"
    continues = ("--resume", "latest")
    mode_flag = "--approval-mode"

    bypass_flags = frozenset({"--yolo", "-y"})
    bypass_values = {"--approval-mode": frozenset({"yolo", "auto_edit"})}

    def record_of(self, payload: Mapping[str, object], env: Mapping[str, str]) -> str | None:
        """The chat record ``transcript_path`` names (a JSON line a record)."""
        return transcript_path(payload)

    def server_record(self, env: Mapping[str, str], meta: Mapping[str, object],
                      cwd: str) -> str | None:
        """Its MCP server is told neither the session nor its record (only
        ``GEMINI_CLI=1``): the newest chat record of the project the server runs in,
        ``~/.gemini/tmp/<project>/chats/session-*.jsonl``, is taken for it."""
        if env.get("GEMINI_CLI") != "1":
            return None
        tmp = os.path.join(os.path.expanduser("~"), ".gemini", "tmp")
        newest: tuple[float, str] | None = None
        for project in _project_folders(tmp, cwd):
            chats = os.path.join(tmp, project, "chats")
            try:
                with os.scandir(chats) as found:
                    for entry in found:
                        if entry.name.startswith("session-") and entry.name.endswith(".jsonl"):
                            when = entry.stat().st_mtime
                            if newest is None or when > newest[0]:
                                newest = (when, entry.path)
            except OSError:
                continue
        return None if newest is None else newest[1]

    def given(self, entry: Mapping[str, Any]) -> object | None:
        """A ``user`` record is what a request held (a hook's context is part of one,
        its ``<`` and ``>`` escaped; a tool's result its ``functionResponse``)."""
        return True if entry.get("type") == "user" else None

    def answers(self, entry: Mapping[str, Any], given: object) -> bool:
        """A ``gemini`` record after it: the model answered (a message of the model's
        written again once its tool calls end comes before the record it led to)."""
        return entry.get("type") == "gemini"

    def remote_entry(self, endpoint: str, secret_env: str) -> dict[str, Any]:
        # settings.json expands $VAR / ${VAR} in string values
        return {"httpUrl": endpoint, "headers": {"Authorization": f"Bearer ${{{secret_env}}}"}}

    def argv(self, executable: str, start: Start) -> list[str]:
        argv = [executable, *option("--model", start.model)]
        argv += option("--approval-mode", start.permission_mode)
        argv += option("--session-id", start.session_id) + list(start.extra)
        if start.handoff == "background":  # headless needs --prompt; glued, one argument
            return [*argv, f"--prompt={start.prompt}"]
        return [*argv, "--", start.prompt]

    def speaks_as_another(self, folder: str, agent: str) -> str | None:
        """Gemini CLI has no per-session MCP settings (no flag; a private system settings
        file through ``GEMINI_CLI_SYSTEM_SETTINGS_PATH`` is skipped unless it and every
        folder above it belong to root, as measured with 0.61.0). A session takes its
        name from ``MAILSLOT_AGENT``, which a ``serve`` registered without ``--agent``
        reads: a registration naming another agent would win."""
        for path in (os.path.join(folder, ".gemini", "settings.json"),
                     os.path.join(os.path.expanduser("~"), ".gemini", "settings.json")):
            try:  # a person's settings may be a dotfile manager's link; never a FIFO
                data = jsontext.loads(read_file(path, 1 << 22, follow=True))
            except (OSError, ValueError, UnsafePath):
                continue
            servers = data.get("mcpServers") if isinstance(data, dict) else None
            entry = servers.get(SERVER) if isinstance(servers, dict) else None
            args = entry.get("args") if isinstance(entry, dict) else None
            words = [str(w) for w in args] if isinstance(args, list) else []
            bound = next((words[i + 1] for i, w in enumerate(words[:-1]) if w == "--agent"),
                         None)
            if bound is not None and bound.lower() != agent:
                return (f"{path} registers mailslot as agent {bound!r}, and Gemini CLI has "
                        f"no per-session MCP settings, so the session would speak as "
                        f"{bound!r}, not {agent!r}: register it there without --agent "
                        "(mailslot serve then reads MAILSLOT_AGENT) or start another host")
        return None


def _project_folders(tmp: str, cwd: str) -> list[str]:
    """The names ``~/.gemini/tmp/`` may keep ``cwd``'s chats under: the one
    ``~/.gemini/projects.json`` names for it (0.61), its base name, its SHA-256
    (older versions)."""
    import hashlib

    found = []
    try:
        data = jsontext.loads(read_file(os.path.join(os.path.dirname(tmp), "projects.json"),
                                        1 << 22, follow=True))
    except (OSError, ValueError, UnsafePath):
        data = None
    mapping = data.get("projects", data) if isinstance(data, dict) else None
    named = mapping.get(cwd) if isinstance(mapping, dict) else None
    if isinstance(named, str) and named and "/" not in named and not named.startswith("."):
        found.append(named)
    found += [os.path.basename(cwd), hashlib.sha256(cwd.encode()).hexdigest()]
    return [name for name in found if name and name not in (".", "..")]


HOST = Gemini()
