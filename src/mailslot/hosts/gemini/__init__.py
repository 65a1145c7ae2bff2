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

TYPE_CHECKING = False
if TYPE_CHECKING:
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


HOST = Gemini()
