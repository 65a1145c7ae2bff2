"""mailslot as a plugin of the hosts that install plugins themselves (Claude Code, Codex).

A plugin cannot know where mailslot is installed or which agent a session is, so it runs
``mailslot`` from ``PATH`` and takes the agent from the user: Claude Code asks for it when
the plugin is enabled (``userConfig``, substituted as ``${user_config.agent}``); Codex has
no such prompt, so its plugin passes ``MAILSLOT_AGENT`` (and ``MAILSLOT_DIR``) through from
the environment Codex was started in. The hook events, matchers and timeouts are those of
``mailslot install HOST --hooks`` (:mod:`.host_settings`), so the two ways of installing agree.

The files are checked in under ``plugins/`` (with each host's marketplace file at the
top of the repository); ``scripts/gen_plugins.py`` writes them from here and a test fails
when they drift. See docs/plugins.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from .. import __version__
from . import entries
from .host_settings import HOSTS

DESCRIPTION = ("A local mailbox for AI coding agents: MCP tools to send and answer mail, "
               "and hooks that show new mail at session start, at each prompt and after "
               "tool calls.")
AUTHOR = {"name": "mailslot"}
CLAUDE_AGENT = "${user_config.agent}"
CLAUDE_MAILBOX = "${user_config.mailbox}"


def _json(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _package(host: str, manifest_dir: str, manifest: dict[str, Any],
             server: dict[str, Any], command: Callable[[str], str]) -> dict[str, str]:
    """One plugin's files: manifest, MCP server, and the hooks ``install HOST --hooks``
    writes (same events, matchers and timeouts), each running ``command(event)``."""
    spec = HOSTS[host].hooks
    assert spec is not None
    hooks: dict[str, Any] = {}
    entries.set_hooks(hooks, spec, command, "", "plugin")
    base = {"name": "mailslot", "version": __version__, "description": DESCRIPTION,
            "author": AUTHOR, "keywords": ["mail", "agents", "mcp", "hooks"]}
    return {f"plugins/{host}/{manifest_dir}/plugin.json": _json({**base, **manifest}),
            f"plugins/{host}/.mcp.json": _json({"mcpServers": {"mailslot": server}}),
            f"plugins/{host}/hooks/hooks.json": _json(hooks)}


def _claude() -> dict[str, str]:
    tail = f'--agent {CLAUDE_AGENT} --dir "{CLAUDE_MAILBOX}"'
    ask = {
        "agent": {"type": "string", "title": "Agent name",
                  "description": "The name this Claude Code reads and sends mail as "
                                 "(1-64 of a-z, 0-9 and -).", "required": True},
        "mailbox": {"type": "string", "title": "Mailbox folder",
                    "description": "The mailbox every agent on this machine shares.",
                    "default": "~/mailslot"},
    }
    server = {"type": "stdio", "command": "mailslot",
              "args": ["serve", "--agent", CLAUDE_AGENT, "--dir", CLAUDE_MAILBOX]}
    return {
        **_package("claude", ".claude-plugin", {"userConfig": ask}, server,
                   lambda event: f"mailslot hook claude {event} {tail}"),
        ".claude-plugin/marketplace.json": _json({
            "name": "mailslot", "owner": AUTHOR,
            "plugins": [{"name": "mailslot", "source": "./plugins/claude",
                         "description": DESCRIPTION}],
        }),
    }


def _codex() -> dict[str, str]:
    manifest = {
        "mcpServers": "./.mcp.json", "hooks": "./hooks/hooks.json",
        "interface": {"displayName": "mailslot", "shortDescription": DESCRIPTION,
                      "category": "Coding"},
    }
    server = {"command": "mailslot", "args": ["serve"],
              "env_vars": ["MAILSLOT_AGENT", "MAILSLOT_DIR"]}
    return {
        **_package("codex", ".codex-plugin", manifest, server,
                   lambda event: f"mailslot hook codex {event}"),
        ".agents/plugins/marketplace.json": _json({
            "name": "mailslot", "interface": {"displayName": "mailslot"},
            "plugins": [{"name": "mailslot",
                         "source": {"source": "local", "path": "./plugins/codex"},
                         "policy": {"installation": "AVAILABLE",
                                    "authentication": "ON_INSTALL"},
                         "category": "Coding"}],
        }),
    }


def plugin_files() -> dict[str, str]:
    """Every file of both plugins and their marketplaces: path in the repository -> text."""
    return {**_claude(), **_codex()}
