"""Copilot CLI (``@github/copilot``): everything mailslot knows about it.

Sources: GitHub's Copilot CLI documentation (docs.github.com/copilot), checked against
the real program offline (docs/hosts.md). Its ``userPromptSubmitted`` hook cannot add
context, so mail shows at session start, after tool calls and at stop. It also uses a
project's ``.mcp.json`` and the hooks in Claude Code's project settings, as whichever
agent those name, with its own output shapes; it keeps no tool approvals between runs.
"""

from __future__ import annotations

from ...core import jsontext
from ...host_registry.host import (
    MIDTURN,
    SERVER,
    START,
    STOP,
    Hook,
    HookFile,
    Host,
    Rung,
    Start,
    decision,
    field,
    option,
)
from ..claude import HOOK_FILES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


TOOL = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}(\([^()\x00-\x1f]{0,200}\))?"
"""An ``--allow-tool`` pattern: ``server``, ``tool`` or ``server(tool)`` (compiled on first
use, by ``re``'s cache: every hook of a host whose hooks this one runs loads this module)."""


class Copilot(Host):
    name = "copilot"
    title = "Copilot CLI"
    program_env = ("COPILOT_*", "GH_TOKEN", "GITHUB_TOKEN", "GH_HOST")
    package = "@github/copilot"
    runtime = "copilot-cli"

    default_scope = "user"
    mcp_path = {"project": ".mcp.json", "user": "~/.copilot/mcp-config.json"}
    mcp_fields = {"type": "stdio", "tools": ["*"]}
    hook_file = HookFile({"project": ".github/hooks/mailslot.json",
                          "user": "~/.copilot/hooks/mailslot.json"},
                         (Hook("sessionStart", "session-start"), Hook("agentStop", "stop"),
                          Hook("postToolUse", "post-tool-use")), 10,
                         grouped=False, version=1)
    also_runs = ("claude", HOOK_FILES[:2])
    also_reads = (".mcp.json", *HOOK_FILES[:2])
    install_notes = {"project": (
        "Copilot CLI reads the project's .mcp.json only in a trusted folder, and not with -p "
        "unless GITHUB_COPILOT_PROMPT_MODE_WORKSPACE_MCP=true. Claude Code reads this file "
        "too: both then speak as the same agent.",
    )}

    events = {"session-start": START, "stop": STOP, "post-tool-use": MIDTURN}
    outputs = {START: field("additionalContext"), STOP: decision("block"),
               MIDTURN: field("additionalContext")}
    shows_at = frozenset({START, STOP, MIDTURN})
    session_fields = ("sessionId", "session_id")
    tool_names = "mailslot-{}"

    wake_ladder = (Rung("tmux"), Rung("copilot"), Rung("command"))
    """No way into a live session but its pane; else a separate ``--resume`` turn."""

    program = "copilot"
    startable = True
    modes = ("default", "allow-all-tools")
    default_allowed = ("default",)
    bypass = frozenset({"allow-all-tools"})
    default_mode = "default"
    efforts = ("none", "minimal", "low", "medium", "high", "xhigh", "max")  # --help 1.0.102
    session_ids = True
    takes_tools = True
    wake_method = "copilot"
    own_servers = True

    bypass_flags = frozenset({"--allow-all-tools", "--allow-all", "--allow-all-paths",
                              "--allow-all-urls", "--autopilot"})
    bypass_values = {"--mode": frozenset({"autopilot"})}

    def hook_handler(self, ours: str, command: str) -> dict[str, Any]:
        return {"type": "command", "bash": command, "timeoutSec": self.hook_file.timeout}

    def runs_borrowed(self, payload: Mapping[str, object], env: Mapping[str, str]) -> bool:
        """Copilot's input has a ``timestamp`` (or camelCase ``sessionId``) that Claude
        Code never sends."""
        return "timestamp" in payload or "sessionId" in payload

    def argv(self, executable: str, start: Start) -> list[str]:
        argv = [executable, *option("--model", start.model)]
        argv += option("--reasoning-effort", start.effort) + option("--name", start.name)
        argv += option("--session-id", start.session_id) + list(start.extra)
        if start.permission_mode == "allow-all-tools":
            argv.append("--allow-all-tools")
        # no positional prompt: --prompt/--interactive glued to it, one argument, so a
        # prompt starting with "-" is still the prompt.
        flag = "--prompt" if start.handoff == "background" else "--interactive"
        return [*argv, f"{flag}={start.prompt}"]

    def valid_tool(self, pattern: str) -> bool:
        import re  # not at import: a hook loads this module and never needs it

        return re.fullmatch(TOOL, pattern) is not None

    def session_server(self, command: str, args: list[str], *,
                       url_store: bool) -> list[str] | None:
        """``--additional-mcp-config JSON``."""
        entry = {"type": "local", "command": command, "args": args, "tools": ["*"]}
        return [f"--additional-mcp-config={jsontext.dumps({'mcpServers': {SERVER: entry}})}"]


HOST = Copilot()
