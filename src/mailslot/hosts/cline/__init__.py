"""Cline CLI (``cline``): everything mailslot knows about it.

Cline keeps MCP settings per data folder, not per project: a stdio server is ``command``
and ``args`` inside ``transport``. Checked against the real program offline.

Waking: ``cline --id SESSION`` opens a saved session in the TUI only (it drops a prompt
given with it and refuses ``--json``; checked with 3.0.65), so the ``cline`` wake method
continues the session through Cline's Agent Client Protocol mode instead: ``cline
--acp``, then ``session/load`` of the session and one ``session/prompt`` carrying the
notice (:mod:`mailslot.wake.acp`). In that mode Cline asks its client before every
tool, and mailslot answers no. Its plain headless runs approve every tool by default
(``--auto-approve true``), and ``--yolo`` and ``--zen`` skip approvals too: mailslot
never passes any of them. Cline has no command hooks mailslot writes, so no session is
recorded as an agent's latest: a wake names its session (``cline history --json``).
"""

from __future__ import annotations

from ...host_registry.host import Host, Rung

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class Cline(Host):
    name = "cline"
    title = "Cline CLI"
    program_env = ("CLINE_*",)
    wake_ladder = (Rung("tmux"), Rung("cline", "3.0.65"), Rung("command"))
    package = "cline"

    default_scope = "user"
    mcp_path = {"project": ".cline/data/settings/cline_mcp_settings.json",
                "user": "~/.cline/data/settings/cline_mcp_settings.json"}
    install_notes = {"project": ("Cline reads this file only when started with "
                                 "`--data-dir .cline/data` (it keeps MCP settings per data "
                                 "folder, not per project).",)}

    bypass_flags = frozenset({"--yolo", "-y", "--zen", "-z"})
    bypass_values = {"--auto-approve": frozenset({"true"})}

    def server_entry(self, command: str, args: list[str]) -> dict[str, Any]:
        return {**self.mcp_fields, "transport": {"type": "stdio", "command": command,
                                                 "args": args}}


HOST = Cline()
