"""OpenCode (``opencode-ai``): everything mailslot knows about it.

Its MCP servers sit under ``mcp`` in ``opencode.json``, each a ``local`` entry whose
``command`` is one list. It has no command hooks (its plugins are JavaScript), so its
agents read mail through the MCP tools. Checked against the real program offline.
"""

from __future__ import annotations

from .host import Host

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class OpenCode(Host):
    name = "opencode"
    title = "OpenCode"
    package = "opencode-ai"

    mcp_path = {"project": "opencode.json", "user": "~/.config/opencode/opencode.json"}
    mcp_container = "mcp"
    mcp_fields = {"type": "local", "enabled": True}
    install_notes = {scope: ("OpenCode has no command hooks (its plugins are JavaScript); its "
                             "agents read mail through the MCP tools. `opencode mcp list` "
                             "checks the server.",) for scope in ("project", "user")}

    def server_entry(self, command: str, args: list[str]) -> dict[str, Any]:
        return {**self.mcp_fields, "command": [command, *args]}


HOST = OpenCode()
