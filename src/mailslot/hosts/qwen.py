"""Qwen Code (``@qwen-code/qwen-code``): everything mailslot knows about it.

A fork of Gemini CLI whose hooks take Claude Code's events and output shapes (its
settings file holds both the MCP servers and the hooks; timeouts in milliseconds).
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
    install_notes = {"project": ("With folder trust on (security.folderTrust.enabled), Qwen "
                                 "Code reads project settings and hooks only in trusted "
                                 "folders.",)}

    events = CLAUDE_STYLE_EVENTS
    outputs = OUTPUTS


HOST = Qwen()
