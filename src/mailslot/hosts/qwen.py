"""Qwen Code (``@qwen-code/qwen-code``): everything mailslot knows about it.

A fork of Gemini CLI whose hooks take Claude Code's events and output shapes (its
settings file holds both the MCP servers and the hooks; timeouts in milliseconds).
Since 0.24 a project's MCP servers wait for the person's approval (``qwen mcp approve``,
kept per project and entry in ``~/.qwen/mcpApprovals.json``); ``install`` writes none.
Checked against the real program offline (docs/hosts.md).
"""

from __future__ import annotations

from .claude import HOOKS, OUTPUTS
from .host import CLAUDE_STYLE_EVENTS, Hook, HookFile, Host


class Qwen(Host):
    name = "qwen"
    title = "Qwen Code"
    package = "@qwen-code/qwen-code"

    mcp_path = {"project": ".qwen/settings.json", "user": "~/.qwen/settings.json"}
    # No SessionStart matcher: every source, whatever Qwen compares it as.
    hook_file = HookFile({"project": ".qwen/settings.json", "user": "~/.qwen/settings.json"},
                         (Hook("SessionStart", "session-start"), *HOOKS[1:]), 10_000)
    install_notes = {"project": (
        "Qwen Code connects a project's MCP server only once you approve it: run `qwen mcp "
        "approve mailslot` in the project (or approve it when Qwen asks); a changed entry "
        "asks again.",
        "With folder trust on (security.folderTrust.enabled), Qwen Code reads project "
        "settings and hooks only in trusted folders.",
    )}

    events = CLAUDE_STYLE_EVENTS
    outputs = OUTPUTS
    tool_names = "mcp__mailslot__{}"


HOST = Qwen()
