"""mailslot as a plugin of the hosts that install plugins themselves.

A plugin cannot know where mailslot is installed or which agent a session is, so it runs
``mailslot`` from ``PATH`` and takes the agent from the user or the environment, as each
host allows (:meth:`~mailslot.host_registry.host.Host.plugin_files`). The hook events, matchers
and timeouts are those of ``mailslot install HOST --hooks``, so the two ways of
installing agree.

The files are checked in under ``plugins/`` (with each host's marketplace file at the
top of the repository); ``scripts/gen_plugins.py`` writes them from here and a test fails
when they drift. See docs/plugins.md.
"""

from __future__ import annotations

import json
from typing import Any

from ... import host_registry as hosts
from ...core import __version__
from ...host_registry.host import Plugin
from . import entries

DESCRIPTION = ("A local mailbox for AI coding agents: MCP tools to send and answer mail, "
               "and hooks that show new mail at session start, at each prompt and after "
               "tool calls.")
AUTHOR = {"name": "mailslot"}


def _text(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def package(host: hosts.Host, plugin: Plugin) -> dict[str, str]:
    """One plugin's files: manifest, MCP server, and the hooks ``install HOST --hooks``
    writes (same events, matchers and timeouts), and its marketplace file."""
    hooks: dict[str, Any] = {}
    entries.set_hooks(hooks, host, plugin.command, "", "plugin")
    base = {"name": "mailslot", "version": __version__, "description": DESCRIPTION,
            "author": AUTHOR, "keywords": ["mail", "agents", "mcp", "hooks"]}
    where = f"plugins/{host.name}"
    return {f"{where}/{plugin.manifest_dir}/plugin.json": _text({**base, **plugin.manifest}),
            f"{where}/.mcp.json": _text({"mcpServers": {"mailslot": plugin.server}}),
            f"{where}/hooks/hooks.json": _text(hooks),
            plugin.marketplace_path: _text(plugin.marketplace)}


def plugin_files() -> dict[str, str]:
    """Every file of every plugin and marketplace: path in the repository -> text."""
    return {path: text for host in hosts.every()
            if (plugin := host.plugin(DESCRIPTION)) is not None
            for path, text in package(host, plugin).items()}
