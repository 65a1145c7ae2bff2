"""Grok Build (xAI's ``grok`` CLI; docs.x.ai/build): everything mailslot knows about it.

MCP only: its hooks are documented, but not that a hook's output reaches the model. It
documents headless runs (``grok -p PROMPT``) and resuming a saved session (``-r,
--resume ID``; sessions in ``~/.grok/sessions``), which is how it is woken; never with
``--always-approve``. Not the community ``grok`` of the npm package
``@vibe-kit/grok-cli``, which has another interface.
"""

from __future__ import annotations

from ...host_registry.host import Host, Rung


class Grok(Host):
    name = "grok"
    title = "Grok Build"
    program_env = ("GROK_*", "XAI_*")
    runtime = "grok-cli"

    mcp_path = {"project": ".grok/config.toml", "user": "~/.grok/config.toml"}
    mcp_format = "toml"
    mcp_container = "mcp_servers"
    install_notes = {"project": (
        "Grok Build starts a project's MCP servers only once you trust the folder "
        "(/hooks-trust in Grok, or start it with --trust).",
    )}

    bypass_flags = frozenset({"--always-approve"})
    program = "grok"
    wake_ladder = (Rung("tmux"), Rung("grok"), Rung("command"))
    """No way into a live session but its pane; else a separate ``--resume`` turn."""


HOST = Grok()
