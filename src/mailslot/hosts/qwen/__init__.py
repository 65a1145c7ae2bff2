"""Qwen Code (``@qwen-code/qwen-code``): everything mailslot knows about it.

A fork of Gemini CLI whose hooks take Claude Code's events and output shapes (its
settings file holds both the MCP servers and the hooks; timeouts in milliseconds).
Since 0.24 a project's MCP servers wait for the person's approval (``qwen mcp approve``,
kept per project and entry in ``~/.qwen/mcpApprovals.json``); ``install`` writes none.
Checked against the real program offline (docs/hosts.md).

Waking: ``qwen --resume ID NOTICE`` continues a saved session with one headless turn
(the ``qwen`` wake method; the prompt positional, since ``-p`` is deprecated), with the
approval mode of the person's settings: ``--yolo`` and ``--approval-mode
yolo|auto-edit|auto`` would approve tools for them, so mailslot never passes them.
Under ``-p`` Qwen runs no SessionStart hook, so only interactive sessions are recorded
as an agent's latest; a headless session can be named by its id (``--session-id``
chooses one). Proven with 0.15.10 and 0.24.4.
"""

from __future__ import annotations

import os

from ...host_registry.host import Hook, HookFile, Host, Rung
from ..claude import CLAUDE_STYLE_EVENTS, HOOKS, OUTPUTS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping


class Qwen(Host):
    name = "qwen"
    title = "Qwen Code"
    program_env = ("OPENAI_*", "QWEN_*", "DASHSCOPE_API_KEY")
    wake_ladder = (Rung("qwen-peer", "0.24.4"), Rung("tmux"), Rung("qwen", "0.15.10"),
                   Rung("command"))
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

    bypass_flags = frozenset({"--yolo", "-y"})
    bypass_values = {"--approval-mode": frozenset({"yolo", "auto-edit", "auto"})}


HOST = Qwen()


def qwen_home(env: Mapping[str, str]) -> str:
    """Qwen's global folder: ``$QWEN_HOME``, else ``~/.qwen`` (as Qwen finds it)."""
    given = env.get("QWEN_HOME")
    if given:
        return os.path.abspath(os.path.expanduser(given))
    return os.path.join(env.get("HOME") or os.path.expanduser("~"), ".qwen")


def sessions_folder(env: Mapping[str, str]) -> str:
    return os.path.join(qwen_home(env), "sessions")
