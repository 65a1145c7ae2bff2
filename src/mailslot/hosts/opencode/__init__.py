"""OpenCode (``opencode-ai``): everything mailslot knows about it.

Its MCP servers sit under ``mcp`` in ``opencode.json``, each a ``local`` entry whose
``command`` is one list. It has no command hooks (its plugins are JavaScript), so its
agents read mail through the MCP tools. Checked against the real program offline.

Waking (the ``opencode`` method): ``opencode run --session ID PROMPT`` continues a
session, its history carried (the ``sessionID`` of ``opencode run --format json``, or
``opencode session list``). Run alone it is a headless turn; with ``--attach URL`` the
turn runs in the OpenCode server at that address, so an open TUI started with
``opencode --port PORT`` (or a server started with ``opencode serve --port PORT``)
shows the woken turn as it happens. Either way the run answers the session's
permission requests itself: it rejects what no rule allows (``--auto``, which approves
them, and its hidden spellings ``--yolo`` and ``--dangerously-skip-permissions`` are
never passed). The server's password, if it has one, is read by ``opencode`` from
``OPENCODE_SERVER_PASSWORD`` in the watcher's environment, never from mailslot's config.

Kilo Code CLI, a fork, wakes the same way: its wake subclasses :class:`.wake.RunMethod`.
"""

from __future__ import annotations

from ...host_registry.host import Host, Rung
from .. import PROVIDER_ENV

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class OpenCode(Host):
    name = "opencode"
    title = "OpenCode"
    program_env = ("OPENCODE_*", *PROVIDER_ENV)
    wake_ladder = (Rung("tmux"), Rung("opencode"), Rung("command"))
    package = "opencode-ai"

    mcp_path = {"project": "opencode.json", "user": "~/.config/opencode/opencode.json"}
    mcp_container = "mcp"
    mcp_fields = {"type": "local", "enabled": True}
    install_notes = {scope: ("OpenCode has no command hooks (its plugins are JavaScript); its "
                             "agents read mail through the MCP tools. `opencode mcp list` "
                             "checks the server.",) for scope in ("project", "user")}

    bypass_flags = frozenset({"--auto", "--yolo", "--dangerously-skip-permissions"})

    def server_entry(self, command: str, args: list[str]) -> dict[str, Any]:
        return {**self.mcp_fields, "command": [command, *args]}


HOST = OpenCode()
