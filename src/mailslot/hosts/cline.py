"""Cline CLI (``cline``): everything mailslot knows about it.

Cline keeps MCP settings per data folder, not per project: a stdio server is ``command``
and ``args`` inside ``transport``. Checked against the real program offline.
"""

from __future__ import annotations

from .host import Host

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class Cline(Host):
    name = "cline"
    title = "Cline CLI"
    package = "cline"

    default_scope = "user"
    mcp_path = {"project": ".cline/data/settings/cline_mcp_settings.json",
                "user": "~/.cline/data/settings/cline_mcp_settings.json"}
    install_notes = {"project": ("Cline reads this file only when started with "
                                 "`--data-dir .cline/data` (it keeps MCP settings per data "
                                 "folder, not per project).",)}

    def server_entry(self, command: str, args: list[str]) -> dict[str, Any]:
        return {**self.mcp_fields, "transport": {"type": "stdio", "command": command,
                                                 "args": args}}


HOST = Cline()
